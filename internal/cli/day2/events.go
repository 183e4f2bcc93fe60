package day2

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/cli"
)

// EventsOptions are the options of `drover events`.
type EventsOptions struct {
	// Namespace and App name the DRPlacementControl.
	Namespace, App string
	// Kubeconfigs are kubeconfig files of the person for some managed clusters, used instead
	// of the hub's credential.
	Kubeconfigs ClusterKubeconfigs
	// Output is "" for the table, or json, yaml or jsonpath=TEMPLATE: the events as a
	// Kubernetes List, each annotated with the cluster it was read from (AnnotationEventCluster).
	Output string
	// Notes receives, with a structured Output, the clusters whose events were not read (the
	// table prints them after it); nil discards them.
	Notes io.Writer
	// Now is the clock, for the ages; nil means time.Now.
	Now func() time.Time
}

// AnnotationEventCluster names, on each event of `drover events -o json|yaml`, the cluster it
// was read from: hub, or a DRCluster's name.
const AnnotationEventCluster = "drover.io/cluster"

// clusterEvent is an Event with the cluster it was read from.
type clusterEvent struct {
	cluster string
	at      time.Time
	ev      corev1.Event
}

// Events prints, oldest first, the Events about an application: on the hub those of its
// DRPlacementControl, on each managed cluster of its policy those of its namespaces (its group's
// among them), with the cluster as a column. A cluster whose events cannot be read is named
// after the table, with the reason.
func Events(ctx context.Context, hubCfg *rest.Config, w io.Writer, o EventsOptions) error {
	if o.App == "" {
		return cli.Usage(errors.New("name the application (its DRPlacementControl) whose events to print"))
	}
	if err := cli.CheckOutput(o.Output, cli.OutputJSON, cli.OutputYAML); err != nil {
		return err
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	hub, err := hubClient(hubCfg)
	if err != nil {
		return err
	}
	a, err := cli.LoadApp(ctx, hub, o.Namespace, o.App)
	if err != nil {
		return err
	}
	d := a.DRPC
	hubEvents := &corev1.EventList{}
	if err := hub.List(ctx, hubEvents, client.InNamespace(d.Namespace),
		client.MatchingFields{"involvedObject.kind": "DRPlacementControl", "involvedObject.name": d.Name}); err != nil {
		return cli.ReadError("the events of DRPlacementControl "+d.Namespace+"/"+d.Name, err)
	}
	all := tagEvents("hub", hubEvents.Items)
	var notes []string
	if a.Policy != nil {
		clusters, err := managedClusters(ctx, hub, o.Kubeconfigs)
		if err != nil {
			return err
		}
		namespaces := d.Spec.ProtectedNamespaces
		if len(namespaces) == 0 {
			namespaces = []string{d.Namespace}
		}
		for _, name := range a.Policy.Spec.DRClusters {
			evs, err := clusterEvents(ctx, findCluster(clusters, name), name, namespaces)
			if err != nil {
				notes = append(notes, err.Error())
			}
			all = append(all, evs...)
		}
	} else {
		notes = append(notes, fmt.Sprintf("DRPolicy %s does not exist: the managed clusters are not known", d.Spec.DRPolicyRef.Name))
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].at.Before(all[j].at) })
	if cli.Structured(o.Output) {
		return printEventList(w, o.Notes, o.Output, all, notes)
	}
	return printEvents(w, all, notes, now())
}

// printEventList prints the events as a Kubernetes List, each annotated with its cluster, and
// the clusters not read to notes.
func printEventList(w, notes io.Writer, format string, all []clusterEvent, missing []string) error {
	items := make([]corev1.Event, 0, len(all))
	for _, e := range all {
		ev := *e.ev.DeepCopy()
		if ev.Annotations == nil {
			ev.Annotations = map[string]string{}
		}
		ev.Annotations[AnnotationEventCluster] = e.cluster
		ev.APIVersion, ev.Kind = "v1", "Event"
		ev.ManagedFields = nil
		items = append(items, ev)
	}
	if err := cli.PrintList(w, items, format); err != nil {
		return err
	}
	if notes != nil {
		for _, n := range missing {
			fmt.Fprintf(notes, "Not read: %s\n", n)
		}
	}
	return nil
}

// clusterEvents reads the events of the namespaces on one managed cluster.
func clusterEvents(ctx context.Context, m *managedCluster, name string, namespaces []string) ([]clusterEvent, error) {
	switch {
	case m == nil:
		return nil, fmt.Errorf("%s: no DRCluster of that name on the hub", name)
	case m.err != nil:
		return nil, fmt.Errorf("%s: not read: %w", name, m.err)
	}
	var out []clusterEvent
	for _, ns := range namespaces {
		list := &corev1.EventList{}
		if err := m.cl.List(ctx, list, client.InNamespace(ns)); err != nil {
			if apierrors.IsForbidden(err) {
				return out, fmt.Errorf("%s: %s", name, m.forbidden("list the Events of "+ns))
			}
			return out, fmt.Errorf("%s: failed to list the Events of %s: %w", name, ns, err)
		}
		out = append(out, tagEvents(name, list.Items)...)
	}
	return out, nil
}

// tagEvents pairs each event with its cluster and time.
func tagEvents(cluster string, evs []corev1.Event) []clusterEvent {
	out := make([]clusterEvent, 0, len(evs))
	for _, e := range evs {
		out = append(out, clusterEvent{cluster: cluster, at: eventTime(&e), ev: e})
	}
	return out
}

// eventTime is when an event last happened: its last timestamp, its series' last observation,
// its event time, its first timestamp, else its creation.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

// printEvents prints the table and, after it, the clusters not read.
func printEvents(w io.Writer, all []clusterEvent, notes []string, now time.Time) error {
	tw := cli.NewTabWriter(w)
	fmt.Fprintln(tw, "TIME\tAGE\tCLUSTER\tTYPE\tREASON\tOBJECT\tMESSAGE")
	for _, e := range all {
		obj := e.ev.InvolvedObject
		count := ""
		if e.ev.Count > 1 {
			count = fmt.Sprintf(" (x%d)", e.ev.Count)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s%s\n", e.at.UTC().Format(time.RFC3339), cli.Age(now.Sub(e.at)), e.cluster,
			e.ev.Type, e.ev.Reason, strings.ToLower(obj.Kind)+"/"+obj.Name, strings.TrimSpace(e.ev.Message), count)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	p := &cli.Printer{W: w}
	if len(all) == 0 {
		p.Linef("No events (the API server keeps them an hour by default).")
	}
	for _, n := range notes {
		p.Linef("Not read: %s", n)
	}
	return p.Err
}
