package lab

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// ComponentStatus is one process of a cluster as status reports it.
type ComponentStatus struct {
	Name    string
	PID     int
	Running bool
	RSSKiB  int64
}

// ClusterStatus is one cluster's health as `drover lab status` prints it.
type ClusterStatus struct {
	Name     string
	Role     Role
	Endpoint string
	// S3Endpoint is the URL of a managed cluster's S3 server; empty on the hub.
	S3Endpoint string
	Kubeconfig string
	// Healthy is true when every component runs and the API server answers /readyz.
	Healthy bool
	// Problem says what is wrong when the cluster is not healthy.
	Problem    string
	Components []ComponentStatus
}

// Status reports every cluster's health. It changes nothing.
func (l *Lab) Status(ctx context.Context) ([]ClusterStatus, error) {
	if _, err := os.Stat(filepath.Join(l.opts.Dir, stateFile)); err != nil {
		return nil, fmt.Errorf("there is no lab in %s: run `drover lab up` to create one", l.opts.Dir)
	}
	out := make([]ClusterStatus, 0, len(l.clusters))
	for _, c := range l.clusters {
		st, err := c.status(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

func (c *Cluster) status(ctx context.Context) (ClusterStatus, error) {
	st := ClusterStatus{Name: c.Name, Role: c.Role, Endpoint: c.Endpoint(), Kubeconfig: c.KubeconfigPath()}
	if c.Role == RoleManaged {
		st.S3Endpoint = c.S3Endpoint()
	}
	procs, err := c.processes()
	if err != nil {
		return st, err
	}
	var down []string
	for _, comp := range c.components() {
		cs := ComponentStatus{Name: comp.name}
		if p, ok := procs[comp.name]; ok && alive(p.pid) {
			cs.PID, cs.Running, cs.RSSKiB = p.pid, true, rssKiB(p.pid)
		} else {
			down = append(down, comp.name)
		}
		st.Components = append(st.Components, cs)
	}
	switch {
	case len(down) == len(st.Components):
		st.Problem = fmt.Sprintf("stopped: run `drover lab start %s`", c.Name)
	case len(down) > 0:
		st.Problem = fmt.Sprintf("%s not running: see %s, then run `drover lab start %s`", strings.Join(down, ", "), c.logDir(), c.Name)
	default:
		if err := c.apiServerReady(ctx); err != nil {
			st.Problem = fmt.Sprintf("API server not ready: %v", err)
		} else {
			st.Healthy = true
		}
	}
	return st, nil
}

// PrintStatus writes statuses as a table, one line per cluster, and a second table with one line
// per component when verbose.
func PrintStatus(w io.Writer, statuses []ClusterStatus, verbose bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tROLE\tHEALTH\tAPI ENDPOINT\tS3 ENDPOINT\tKUBECONFIG\tRSS")
	for _, st := range statuses {
		health := "healthy"
		if !st.Healthy {
			health = "unhealthy: " + st.Problem
		}
		var rss int64
		for _, cs := range st.Components {
			rss += cs.RSSKiB
		}
		s3 := st.S3Endpoint
		if s3 == "" {
			s3 = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d MiB\n", st.Name, st.Role, health, st.Endpoint, s3, st.Kubeconfig, rss/1024)
	}
	if err := tw.Flush(); err != nil || !verbose {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(tw, "CLUSTER\tCOMPONENT\tSTATE\tPID\tRSS")
	for _, st := range statuses {
		for _, cs := range st.Components {
			if cs.Running {
				fmt.Fprintf(tw, "%s\t%s\trunning\t%d\t%d MiB\n", st.Name, cs.Name, cs.PID, cs.RSSKiB/1024)
			} else {
				fmt.Fprintf(tw, "%s\t%s\tnot running\t-\t-\n", st.Name, cs.Name)
			}
		}
	}
	return tw.Flush()
}
