package cluster

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
)

// ListOptions are what `drover cluster list` asks for.
type ListOptions struct {
	// Output is "" (a table), wide, name, json, yaml or jsonpath=TEMPLATE.
	Output string
	// Now is the clock, for the ages; nil means time.Now.
	Now func() time.Time
}

// List prints the hub's DRClusters: whether each is validated, reachable and declared
// lost, and the DRPolicies that pair it. JSON and YAML print a Kubernetes List of the DRClusters.
func List(ctx context.Context, c client.Reader, w io.Writer, o ListOptions) error {
	if err := cli.CheckOutput(o.Output, cli.OutputWide, cli.OutputName, cli.OutputJSON, cli.OutputYAML); err != nil {
		return err
	}
	clusters := &v1alpha1.DRClusterList{}
	if err := c.List(ctx, clusters); err != nil {
		return fmt.Errorf("failed to list the DRClusters: %w", err)
	}
	policies := &v1alpha1.DRPolicyList{}
	if err := c.List(ctx, policies); err != nil {
		return fmt.Errorf("failed to list the DRPolicies: %w", err)
	}
	for i := range clusters.Items {
		clusters.Items[i].SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("DRCluster"))
		clusters.Items[i].ManagedFields = nil
	}
	switch {
	case cli.Structured(o.Output):
		return cli.PrintList(w, clusters.Items, o.Output)
	case o.Output == cli.OutputName:
		names := make([]string, 0, len(clusters.Items))
		for _, cl := range clusters.Items {
			names = append(names, cl.Name)
		}
		return cli.WriteNames(w, "DRCluster", names)
	}
	printClusterTable(w, clusters.Items, policies.Items, o.Output == "wide", cli.Now(o.Now))
	return nil
}

// printClusterTable prints one line per DRCluster.
func printClusterTable(w io.Writer, clusters []v1alpha1.DRCluster, policies []v1alpha1.DRPolicy, wide bool, t time.Time) {
	tw := cli.NewTabWriter(w)
	header := "NAME\tVALIDATED\tREACHABLE\tLOST\tPOLICIES\tAGE"
	if wide {
		header += "\tS3 PROFILE\tMESSAGE"
	}
	fmt.Fprintln(tw, header)
	for _, cl := range clusters {
		var paired []string
		for _, p := range policies {
			if slices.Contains(p.Spec.DRClusters, cl.Name) {
				paired = append(paired, p.Name)
			}
		}
		lost := "-"
		if cl.Spec.Lost != nil {
			lost = "yes"
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", cl.Name, conditionStatus(cl.Status.Conditions, v1alpha1.ConditionValidated),
			conditionStatus(cl.Status.Conditions, v1alpha1.ConditionReachable), lost, cli.Dash(strings.Join(paired, ",")),
			duration.HumanDuration(t.Sub(cl.CreationTimestamp.Time)))
		if wide {
			line += fmt.Sprintf("\t%s\t%s", cli.Dash(cl.Spec.S3ProfileName), cli.Dash(clusterMessage(cl)))
		}
		fmt.Fprintln(tw, line)
	}
	_ = tw.Flush()
}

// conditionStatus is a condition's status, "Unknown" when absent.
func conditionStatus(conds []metav1.Condition, condType string) string {
	if c := apimeta.FindStatusCondition(conds, condType); c != nil {
		return string(c.Status)
	}
	return string(metav1.ConditionUnknown)
}

// clusterMessage is the message of the first of Validated and Reachable that is not True.
func clusterMessage(cl v1alpha1.DRCluster) string {
	for _, t := range []string{v1alpha1.ConditionValidated, v1alpha1.ConditionReachable} {
		if c := apimeta.FindStatusCondition(cl.Status.Conditions, t); c != nil && c.Status != metav1.ConditionTrue {
			return t + ": " + c.Message
		}
	}
	return ""
}
