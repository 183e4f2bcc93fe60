package actions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
)

// ProtectOptions are what `drover protect` asks for: the DRPlacementControl it creates.
type ProtectOptions struct {
	// Namespace and App are the DRPlacementControl's namespace and name.
	Namespace, App string
	// Policy is the DRPolicy; Cluster the preferred cluster, where the application runs now.
	Policy, Cluster string
	// PVCSelector is a label selector (kubectl's syntax) of the PVCs to protect; empty selects
	// every PVC of the protected namespaces.
	PVCSelector string
	// ProtectedNamespaces are the namespaces protected in self-contained mode (default: the
	// DRPlacementControl's own; others only from an admin namespace). Placement names a Placement
	// instead (placement mode); the two exclude each other.
	ProtectedNamespaces []string
	Placement           string
	// DryRun sends the DRPlacementControl to the API server as a dry run: it is validated (CRD
	// rules, admission policies) and printed, and nothing is created.
	DryRun bool
	// Output is how the result is printed: "" (a line), name, yaml or json.
	Output string
}

// Validate checks the options before anything is sent.
func (o *ProtectOptions) Validate() error {
	switch {
	case o.App == "":
		return cli.Usage(errors.New("name the application: drover protect APP --policy POLICY --cluster CLUSTER"))
	case o.Policy == "":
		return cli.Usage(errors.New("--policy is required: the DRPolicy pairing the clusters (kubectl get drpolicy)"))
	case o.Cluster == "":
		return cli.Usage(errors.New("--cluster is required: the cluster the application runs on now"))
	case o.Placement != "" && len(o.ProtectedNamespaces) > 0:
		return cli.Usage(errors.New("--placement and --protected-namespace exclude each other: a Placement decides where a GitOps tool deploys, protected namespaces are captured whole"))
	}
	if err := cli.CheckOutput(o.Output, cli.OutputName, cli.OutputJSON, cli.OutputYAML); err != nil {
		return err
	}
	if _, err := labels.Parse(o.PVCSelector); err != nil {
		return cli.Usage(fmt.Errorf("--pvc-selector %q: %w", o.PVCSelector, err))
	}
	return nil
}

// DRPC builds the DRPlacementControl the options describe.
func (o *ProtectOptions) DRPC() (*v1alpha1.DRPlacementControl, error) {
	selector, err := metav1.ParseToLabelSelector(o.PVCSelector)
	if err != nil {
		return nil, cli.Usage(fmt.Errorf("--pvc-selector %q: %w", o.PVCSelector, err))
	}
	d := &v1alpha1.DRPlacementControl{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "DRPlacementControl"},
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.App},
		Spec: v1alpha1.DRPlacementControlSpec{
			DRPolicyRef: v1alpha1.PolicyReference{Name: o.Policy}, PreferredCluster: o.Cluster, PVCSelector: *selector,
		},
	}
	switch {
	case o.Placement != "":
		d.Spec.PlacementRef = &v1alpha1.PlacementReference{Kind: "Placement", Name: o.Placement}
	case len(o.ProtectedNamespaces) > 0:
		d.Spec.ProtectedNamespaces = o.ProtectedNamespaces
	default:
		d.Spec.ProtectedNamespaces = []string{o.Namespace}
	}
	return d, nil
}

// Protect creates the DRPlacementControl (or, with DryRun, has the API server validate it) and
// prints it. An application already protected is refused, naming what protects it.
func Protect(ctx context.Context, c client.Client, w io.Writer, o ProtectOptions) error {
	d, err := o.DRPC()
	if err != nil {
		return err
	}
	var opts []client.CreateOption
	if o.DryRun {
		opts = append(opts, client.DryRunAll)
	}
	if err := c.Create(ctx, d, opts...); err != nil {
		return protectErr(d, err)
	}
	d.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("DRPlacementControl"))
	d.ManagedFields = nil
	return printCreated(w, d, o.Output, o.DryRun, "created")
}

// protectErr says why the API server refused the DRPlacementControl.
func protectErr(d *v1alpha1.DRPlacementControl, err error) error {
	switch {
	case apierrors.IsAlreadyExists(err):
		return cli.Refused(fmt.Errorf("%s/%s is already protected (drover status %s -n %s); unprotect it first to change what it protects", d.Namespace, d.Name, d.Name, d.Namespace))
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsBadRequest(err):
		return cli.Refused(fmt.Errorf("the hub refused the DRPlacementControl %s/%s: %w", d.Namespace, d.Name, err))
	}
	return fmt.Errorf("failed to create the DRPlacementControl %s/%s: %w", d.Namespace, d.Name, err)
}

// printCreated prints an object a verb created or deleted, as kubectl does: a line, its name,
// or the object as YAML or JSON.
func printCreated(w io.Writer, obj client.Object, format string, dryRun bool, verb string) error {
	kind := strings.ToLower(obj.GetObjectKind().GroupVersionKind().Kind) + "." + v1alpha1.GroupVersion.Group
	line := fmt.Sprintf("%s/%s %s", kind, obj.GetName(), verb)
	switch {
	case format == cli.OutputName:
		line = kind + "/" + obj.GetName()
	case cli.Structured(format):
		return cli.WriteStructured(w, format, obj)
	case dryRun:
		line += " (server dry run: nothing was changed)"
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// UnprotectOptions are what `drover unprotect` asks for.
type UnprotectOptions struct {
	Namespace, App string
	// DryRun prints what would be removed and changes nothing.
	DryRun bool
	// Confirm asks before deleting; nil deletes without asking.
	Confirm *cli.Confirmation
	// Output is how the result is printed: "" (a line) or name.
	Output string
}

// Unprotect deletes the application's DRPlacementControl after confirmation. The hub then
// removes both groups: replication stops, the stores forget the application, and the
// application, its PVCs and their data stay where they are.
func Unprotect(ctx context.Context, c client.Client, w io.Writer, o UnprotectOptions) error {
	if o.App == "" {
		return cli.Usage(errors.New("name the application: drover unprotect APP -n NAMESPACE"))
	}
	d := &v1alpha1.DRPlacementControl{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.App}, d); err != nil {
		if apierrors.IsNotFound(err) {
			return cli.Refused(fmt.Errorf("%s/%s is not protected: no DRPlacementControl of that name (drover status -n %s lists them)", o.Namespace, o.App, o.Namespace))
		}
		return fmt.Errorf("failed to get the DRPlacementControl %s/%s: %w", o.Namespace, o.App, err)
	}
	d.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("DRPlacementControl"))
	what := fmt.Sprintf("stop protecting %s/%s (running on %s): replication stops and the stores forget it; the application and its data stay",
		o.Namespace, o.App, cli.Dash(d.Status.CurrentPrimary))
	if o.DryRun {
		_, err := fmt.Fprintf(w, "Would %s.\nNothing was changed (--dry-run).\n", what)
		return err
	}
	if o.Confirm != nil {
		if err := o.Confirm.Confirm(what, o.App); err != nil {
			return err
		}
	}
	if err := c.Delete(ctx, d, client.Preconditions{UID: &d.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to delete the DRPlacementControl %s/%s: %w", o.Namespace, o.App, err)
	}
	return printCreated(w, d, o.Output, false, "deleted (the hub removes its groups; drover status shows phase Deleting until they are gone)")
}
