package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
)

// LostOptions are the options of `drover cluster lost`.
type LostOptions struct {
	// Cluster is the DRCluster's name.
	Cluster string
	// Reason says why the cluster is lost; required to declare it.
	Reason string
	// Undo removes the declaration instead.
	Undo bool
	// Yes confirms; without it nothing is changed and the plan is printed.
	Yes bool
}

// notConfirmed ends a preview: without --yes the plan is printed and nothing changes, which is
// not a failure.
const notConfirmed = "Nothing changed: run again with --yes to confirm."

// Validate checks the options before anything is read.
func (o *LostOptions) Validate() error {
	switch {
	case o.Cluster == "":
		return cli.Usage(errors.New("name the DRCluster to declare lost"))
	case !o.Undo && strings.TrimSpace(o.Reason) == "":
		return cli.Usage(errors.New("--reason is required: say why the cluster is lost (it is recorded in the DRCluster and its events)"))
	case o.Undo && o.Reason != "":
		return cli.Usage(errors.New("--reason applies to declaring a cluster lost, not to --undo"))
	}
	return nil
}

// DeclareLost prints what declaring a DRCluster lost (or undoing it) means for the applications
// its policies protect and, with Yes, sets (or removes) the DRCluster's spec.lost. The hub does
// the rest: deletions stop waiting for the cluster, its groups are demoted and removed when it
// answers again.
func DeclareLost(ctx context.Context, c client.Client, w io.Writer, o LostOptions) error {
	if err := o.Validate(); err != nil {
		return err
	}
	drc := &v1alpha1.DRCluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: o.Cluster}, drc); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("DRCluster %s does not exist on the hub: check the name (kubectl get drclusters)", o.Cluster)
		}
		return cli.ReadError("DRCluster "+o.Cluster, err)
	}
	if o.Undo {
		return undoLost(ctx, c, w, drc, o.Yes)
	}
	if drc.Spec.Lost != nil {
		if drc.Spec.Lost.Reason == o.Reason {
			_, err := fmt.Fprintf(w, "DRCluster %s is already declared lost (%s).\n", o.Cluster, o.Reason)
			return err
		}
		return fmt.Errorf("DRCluster %s is already declared lost (%s): run drover cluster lost %s --undo --yes first to change the reason",
			o.Cluster, drc.Spec.Lost.Reason, o.Cluster)
	}
	lines, err := lostPlan(ctx, c, drc)
	if err != nil {
		return err
	}
	p := &cli.Printer{W: w}
	p.Linef("Declaring cluster %s lost (%s):", o.Cluster, o.Reason)
	for _, l := range lines {
		p.Linef("  - %s", l)
	}
	if p.Err != nil {
		return p.Err
	}
	if !o.Yes {
		p.Linef(notConfirmed)
		return p.Err
	}
	patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"spec":{"lost":{"reason":%q}}}`, o.Reason))
	if err := c.Patch(ctx, drc, patch); err != nil {
		return fmt.Errorf("failed to declare DRCluster %s lost: %w", o.Cluster, err)
	}
	p.Linef("DRCluster %s is declared lost; its Fenced condition and events say what the hub does.", o.Cluster)
	return p.Err
}

// lostPlan says what declaring drc lost does, per application of the policies pairing it.
func lostPlan(ctx context.Context, c client.Client, drc *v1alpha1.DRCluster) ([]string, error) {
	var lines []string
	if r := apimeta.FindStatusCondition(drc.Status.Conditions, v1alpha1.ConditionReachable); r != nil && r.Status == metav1.ConditionTrue {
		lines = append(lines, fmt.Sprintf("WARNING: the hub still reaches %s (%s): declare a cluster lost only when it is gone for good", drc.Name, r.Message))
	}
	policies := &v1alpha1.DRPolicyList{}
	if err := c.List(ctx, policies); err != nil {
		return nil, cli.ReadError("DRPolicies", err)
	}
	drpcs := &v1alpha1.DRPlacementControlList{}
	if err := c.List(ctx, drpcs); err != nil {
		return nil, cli.ReadError("DRPlacementControls", err)
	}
	for i := range drpcs.Items {
		d := &drpcs.Items[i]
		idx := slices.IndexFunc(policies.Items, func(p v1alpha1.DRPolicy) bool { return p.Name == d.Spec.DRPolicyRef.Name })
		if idx < 0 || !slices.Contains(policies.Items[idx].Spec.DRClusters, drc.Name) {
			continue
		}
		peer, _ := policies.Items[idx].Spec.Peer(drc.Name)
		if d.Status.CurrentPrimary == drc.Name {
			lines = append(lines, fmt.Sprintf("%s/%s runs on %s: fail it over (drover failover %s -n %s --to %s); relocations to and from %s are refused",
				d.Namespace, d.Name, drc.Name, d.Name, d.Namespace, peer, drc.Name))
			continue
		}
		lines = append(lines, fmt.Sprintf("%s/%s runs on %s: it is no longer protected; deleting it no longer waits for %s", d.Namespace, d.Name, peer, drc.Name))
	}
	return append(lines,
		"deleting an application no longer waits for "+drc.Name+": its group there is recorded in the DRCluster's status.groupsToRemove",
		"no failover or relocation may target "+drc.Name,
		"if "+drc.Name+" answers again, the hub demotes its groups whose application runs on the peer, then removes those recorded; "+
			"undo the declaration (drover cluster lost "+drc.Name+" --undo --yes) once its Fenced condition says none is left"), nil
}

// undoLost removes spec.lost.
func undoLost(ctx context.Context, c client.Client, w io.Writer, drc *v1alpha1.DRCluster, yes bool) error {
	p := &cli.Printer{W: w}
	if drc.Spec.Lost == nil {
		p.Linef("DRCluster %s is not declared lost.", drc.Name)
		return p.Err
	}
	p.Linef("Undoing the declaration that cluster %s is lost (%s):", drc.Name, drc.Spec.Lost.Reason)
	p.Linef("  - actions may target %s again, and deleting an application waits for it again while it is unreachable", drc.Name)
	if n := len(drc.Status.GroupsToRemove); n > 0 {
		p.Linef("  - %d group(s) of deleted applications are still to be removed there; the hub keeps removing them when %s answers", n, drc.Name)
	}
	if p.Err != nil {
		return p.Err
	}
	if !yes {
		p.Linef(notConfirmed)
		return p.Err
	}
	// The mark of a declaration made by drover hub restore goes with it: a later declaration
	// is a person's, which no restore lifts.
	body := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}},"spec":{"lost":null}}`, v1alpha1.AnnotationLostDeclaredByRestore)
	if err := c.Patch(ctx, drc, client.RawPatch("application/merge-patch+json", body)); err != nil {
		return fmt.Errorf("failed to undo the declaration that DRCluster %s is lost: %w", drc.Name, err)
	}
	p.Linef("DRCluster %s is no longer declared lost.", drc.Name)
	return p.Err
}
