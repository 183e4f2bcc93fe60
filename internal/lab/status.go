package lab

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab/process"
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
		if p, ok := procs[comp.name]; ok && process.Alive(p.PID) {
			cs.PID, cs.Running, cs.RSSKiB = p.PID, true, process.RSSKiB(p.PID)
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

// DroverProcess is the hub's or an agent's process as status reports it.
type DroverProcess struct {
	// Cluster is the lab cluster whose component the process is.
	Cluster string
	// Name is drover's Deployment: HubDeployment or AgentDeployment.
	Name    string
	PID     int
	Running bool
	RSSKiB  int64
	// Pod is the pod whose container the process is; its Deployment's name when the lab
	// kubelet runs no pod of it.
	Pod string
	// Restarts counts the lab kubelet's restarts of the pod's container.
	Restarts int32
}

// DRClusterStatus is one DRCluster's conditions as the hub reports them; a condition the hub has
// not written yet is nil.
type DRClusterStatus struct {
	Name      string
	Validated *metav1.Condition
	Reachable *metav1.Condition
}

// DRPolicyStatus is one DRPolicy's Validated condition; nil until the hub writes it.
type DRPolicyStatus struct {
	Name      string
	Validated *metav1.Condition
}

// DroverStatus is what `drover lab status` shows of drover: its processes and, read from the
// hub, the DRClusters and DRPolicies.
type DroverStatus struct {
	// Processes lists the hub and the agents, hub first; empty unless the lab runs drover.
	Processes []DroverProcess
	// HubAnswered is false when the hub's API could not be read; Clusters and Policies are
	// empty then.
	HubAnswered bool
	Clusters    []DRClusterStatus
	Policies    []DRPolicyStatus
}

// hubReadTimeout bounds status's reads from the hub, so a stopped hub costs little.
const hubReadTimeout = 2 * time.Second

// DroverStatus reports drover's processes and, when the hub answers, its DRClusters and
// DRPolicies. It changes nothing.
func (l *Lab) DroverStatus(ctx context.Context) (DroverStatus, error) {
	var st DroverStatus
	if l.opts.RunDrover {
		procs, err := l.droverPods()
		if err != nil {
			return st, err
		}
		st.Processes = procs
	}
	hub, err := l.Cluster(Hub)
	if err != nil {
		return st, err
	}
	cfg, err := hub.RESTConfig()
	if err != nil {
		return st, nil //nolint:nilerr // no hub kubeconfig yet: nothing to read, quietly
	}
	cfg.Timeout = hubReadTimeout
	cl, err := client.New(cfg, client.Options{Scheme: l.scheme})
	if err != nil {
		return st, fmt.Errorf("failed to create a client of the hub: %w", err)
	}
	clusters := &v1alpha1.DRClusterList{}
	policies := &v1alpha1.DRPolicyList{}
	if cl.List(ctx, clusters) != nil || cl.List(ctx, policies) != nil {
		return st, nil //nolint:nilerr // the hub's API is down: skip quietly
	}
	st.HubAnswered = true
	for _, c := range clusters.Items {
		st.Clusters = append(st.Clusters, DRClusterStatus{
			Name:      c.Name,
			Validated: meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionValidated),
			Reachable: meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionReachable),
		})
	}
	for _, p := range policies.Items {
		st.Policies = append(st.Policies, DRPolicyStatus{
			Name: p.Name, Validated: meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionValidated),
		})
	}
	return st, nil
}

// PrintDroverStatus writes drover's processes, DRClusters and DRPolicies as tables, each only
// when there is something to show.
func PrintDroverStatus(w io.Writer, st DroverStatus) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(st.Processes) > 0 {
		fmt.Fprintln(tw, "\nDROVER POD\tCLUSTER\tSTATE\tRESTARTS\tPID\tRSS")
		for _, p := range st.Processes {
			if p.Running {
				fmt.Fprintf(tw, "%s\t%s\trunning\t%d\t%d\t%d MiB\n", p.Pod, p.Cluster, p.Restarts, p.PID, p.RSSKiB/1024)
			} else {
				fmt.Fprintf(tw, "%s\t%s\tnot running: see `kubectl -n %s describe pod %s`\t%d\t-\t-\n", p.Pod, p.Cluster, DroverNamespace, p.Pod, p.Restarts)
			}
		}
	}
	if len(st.Clusters) > 0 {
		fmt.Fprintln(tw, "\nDRCLUSTER\tVALIDATED\tREACHABLE")
		for _, c := range st.Clusters {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, conditionText(c.Validated), conditionText(c.Reachable))
		}
	}
	if len(st.Policies) > 0 {
		fmt.Fprintln(tw, "\nDRPOLICY\tVALIDATED")
		for _, p := range st.Policies {
			fmt.Fprintf(tw, "%s\t%s\n", p.Name, conditionText(p.Validated))
		}
	}
	return tw.Flush()
}

// conditionText is a condition's status, with its reason and message unless it is True.
func conditionText(c *metav1.Condition) string {
	switch {
	case c == nil:
		return "-"
	case c.Status == metav1.ConditionTrue:
		return string(c.Status)
	default:
		return fmt.Sprintf("%s (%s: %s)", c.Status, c.Reason, c.Message)
	}
}

// droverPods reports the containers of drover's pods that each cluster's lab kubelet runs; a
// cluster whose kubelet is not running shows its Deployment not running.
func (l *Lab) droverPods() ([]DroverProcess, error) {
	var out []DroverProcess
	for _, c := range l.clusters {
		name := c.droverDeployment()
		procs, err := c.processes()
		if err != nil {
			return nil, err
		}
		pods, err := c.DroverPods()
		if err != nil {
			return nil, err
		}
		if p, ok := procs[componentKubelet]; !ok || !process.Alive(p.PID) || len(pods) == 0 {
			out = append(out, DroverProcess{Cluster: c.Name, Name: name, Pod: name})
			continue
		}
		for _, pod := range pods {
			for _, ct := range pod.Containers {
				dp := DroverProcess{Cluster: c.Name, Name: name, Pod: pod.Name, Restarts: ct.Restarts}
				if ct.PID > 0 && process.Alive(ct.PID) {
					dp.PID, dp.Running, dp.RSSKiB = ct.PID, true, process.RSSKiB(ct.PID)
				}
				out = append(out, dp)
			}
		}
	}
	return out, nil
}
