package drill

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
)

// HistoryOptions are the options of `drover drill history APP`.
type HistoryOptions struct {
	// Namespace and App name the DRPlacementControl whose drills are listed.
	Namespace, App string
	// Output is "" (a table), name, json, yaml or jsonpath=TEMPLATE.
	Output string
	// Now is the clock, for the ages; nil means time.Now.
	Now func() time.Time
}

// Validate checks the options that do not need the cluster.
func (o *HistoryOptions) Validate() error {
	if err := cli.CheckOutput(o.Output, cli.OutputName, cli.OutputJSON, cli.OutputYAML); err != nil {
		return err
	}
	if o.App == "" {
		return cli.Usage(errors.New("name the application whose drills to list: its DRPlacementControl's name"))
	}
	return nil
}

// History prints the drills of an application, newest first: a table of their phase,
// result, mode, target, RTO, RPO and age; with Output json or yaml a Kubernetes List of the
// DRDrills; with name, kind.group/name lines. The drills of an application that no longer
// exists are listed too; an application that neither exists nor has drills is an error.
func History(ctx context.Context, c client.Reader, w io.Writer, o HistoryOptions) error {
	if err := o.Validate(); err != nil {
		return err
	}
	drills, err := listDrills(ctx, c, o.Namespace, o.App)
	if err != nil {
		return err
	}
	if len(drills) == 0 {
		if err := appExists(ctx, c, o.Namespace, o.App); err != nil {
			return err
		}
	}
	switch {
	case cli.Structured(o.Output):
		items := make([]*v1alpha1.DRDrill, 0, len(drills))
		for i := range drills {
			items = append(items, drillObject(&drills[i]))
		}
		return cli.PrintList(w, items, o.Output)
	case o.Output == cli.OutputName:
		names := make([]string, 0, len(drills))
		for _, d := range drills {
			names = append(names, d.Name)
		}
		return cli.WriteNames(w, "DRDrill", names)
	case len(drills) == 0:
		_, err := fmt.Fprintf(w, "No drills of %s/%s yet: run one with `drover drill %s -n %s`.\n", o.Namespace, o.App, o.App, o.Namespace)
		return err
	}
	tw := cli.NewTabWriter(w)
	fmt.Fprintln(tw, "DRILL\tPHASE\tRESULT\tMODE\tTARGET\tRTO\tRPO\tAGE")
	for _, d := range drills {
		st := d.Status
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Name, drillPhaseWord(st.Phase), cli.Dash(string(st.Result)), cli.Dash(string(st.Mode)),
			cli.Dash(st.TargetCluster), secondsText(st.RTOSeconds), secondsText(st.RPOSeconds), cli.Age(cli.Now(o.Now).Sub(d.CreationTimestamp.Time)))
	}
	return tw.Flush()
}

// appExists is nil when the DRPlacementControl exists, else the error that lists those that do.
func appExists(ctx context.Context, c client.Reader, namespace, name string) error {
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &v1alpha1.DRPlacementControl{})
	switch {
	case apierrors.IsNotFound(err):
		return cli.NotFound(ctx, c, namespace, name)
	case err != nil:
		return cli.ReadError("DRPlacementControl "+namespace+"/"+name, err)
	}
	return nil
}

// listDrills reads the drills of an application, newest first (by creation, then name).
func listDrills(ctx context.Context, c client.Reader, namespace, app string) ([]v1alpha1.DRDrill, error) {
	list := &v1alpha1.DRDrillList{}
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, cli.ReadError("DRDrills", err)
	}
	var out []v1alpha1.DRDrill
	for _, d := range list.Items {
		if d.Spec.DRPCName == app {
			out = append(out, d)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].CreationTimestamp, out[j].CreationTimestamp
		if !a.Equal(&b) {
			return b.Before(&a)
		}
		return out[i].Name > out[j].Name
	})
	return out, nil
}

// Names lists the names of the application's drills starting with prefix, newest first,
// for the shells' completion.
func Names(ctx context.Context, c client.Reader, namespace, app, prefix string) ([]string, error) {
	drills, err := listDrills(ctx, c, namespace, app)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, d := range drills {
		if strings.HasPrefix(d.Name, prefix) {
			names = append(names, d.Name)
		}
	}
	return names, nil
}

// secondsText is a number of seconds as a duration ("1m12s"), "-" when unknown.
func secondsText(s *int64) string {
	if s == nil {
		return "-"
	}
	return (time.Duration(*s) * time.Second).String()
}
