package hubrestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/hub/hubrecord"
	"github.com/drover-io/drover/internal/join"
)

// Options are drover hub restore's.
type Options struct {
	// Hub is the new hub, drover's hub installed.
	Hub join.Cluster
	// Clusters are the --cluster-kubeconfig values, NAME=FILE (or FILE, named by its context).
	Clusters []string
	// Servers are the managed clusters' API addresses as the hub reaches them, by name
	// (--cluster-server NAME=URL); a cluster not named is reached at its kubeconfig's server.
	Servers map[string]string
	// AllowInsecureKubeconfig is join's.
	AllowInsecureKubeconfig bool
	// DryRun prints the plan and changes nothing.
	DryRun bool
	// Confirm asks the person to confirm on a terminal, or takes --yes.
	Confirm *cli.Confirmation
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Wrap, when set, wraps the transport of every client the restore makes, of the hub and
	// of the managed clusters (tests kill the restore at one of its writes with it).
	Wrap transport.WrapperFunc
}

// Restore rebuilds the hub o.Hub from the managed clusters: it reads each, prints what it
// would create, and after confirmation joins each cluster that answered (a new token, the old
// hub's revoked), then creates the DRPolicies and the DRPlacementControls that are missing.
// It writes to no group; the hub rebuilds each DRPlacementControl's status from them.
func Restore(ctx context.Context, w io.Writer, o Options) error {
	if o.Hub.Config == nil {
		return cli.Usage(errors.New("no kubeconfig for the new hub: pass --kubeconfig or set KUBECONFIG"))
	}
	if o.Wrap != nil {
		o.Hub.Config = rest.CopyConfig(o.Hub.Config)
		o.Hub.Config.Wrap(o.Wrap)
	}
	clusters, err := readClusters(ctx, o.Clusters, join.DefaultNamespace, o.Wrap)
	if err != nil {
		return err
	}
	p, err := newPlan(clusters)
	if err != nil {
		return cli.Refused(err)
	}
	hub, err := newClient(o.Hub.Config)
	if err != nil {
		return err
	}
	if err := p.checkHub(ctx, hub); err != nil {
		return err
	}
	printPlan(w, p, o)
	if len(p.joins) == 0 {
		return cli.Unreachable(errors.New("no managed cluster answered: nothing restored; check the kubeconfigs and that the clusters' API servers answer"))
	}
	if o.DryRun {
		return nil
	}
	if err := o.Confirm.Confirm(fmt.Sprintf("restore the hub at %s from %d managed cluster(s)", o.Hub.Config.Host, len(p.joins)), "restore"); err != nil {
		return err
	}
	for _, j := range p.joins {
		if err := joinCluster(ctx, w, j, p, o); err != nil {
			return err
		}
		if err := liftLost(ctx, w, hub, j); err != nil {
			return err
		}
	}
	for _, l := range p.lost {
		if err := createLost(ctx, w, hub, l, cli.Now(o.Now)); err != nil {
			return err
		}
	}
	for _, pol := range p.policies {
		if err := createPolicy(ctx, w, hub, pol); err != nil {
			return err
		}
	}
	for _, d := range p.drpcs {
		if err := ensureDRPC(ctx, w, hub, d, cli.Now(o.Now)); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "The hub rebuilds each DRPlacementControl's status from its groups; drover status -A shows them.\n")
	var declared []string
	for _, l := range p.lost {
		if l.existing == nil || l.existing.Spec.Lost != nil {
			declared = append(declared, l.drc.Name)
		}
	}
	if len(declared) > 0 {
		fmt.Fprintf(w, "Declared lost: %s. The hub cannot reach a cluster it holds no credential for: once one answers, run this restore again, which joins it and lifts the declaration.\n",
			strings.Join(declared, ", "))
	}
	return nil
}

// printPlan says what the restore reads and would create.
func printPlan(w io.Writer, p *plan, o Options) {
	fmt.Fprintf(w, "Restore of the hub at %s from the managed clusters\n", o.Hub.Config.Host)
	for _, s := range p.skipped {
		fmt.Fprintf(w, "  skipped (not read: nothing is joined, declared or guessed for it): %s\n", s)
	}
	for _, j := range p.joins {
		token := "joined again as drover cluster join does, keeping the hub's token while it is valid"
		if j.revoke {
			token = "a new token for the hub, the old hub's tokens revoked"
		}
		fmt.Fprintf(w, "  DRCluster %s: at %s, region %s, S3 profile %s; %s%s\n",
			j.name, cli.OrDefault(o.Servers[j.name], j.conn.Config.Host), j.region, j.profile.Name, token, describeLift(j))
	}
	for _, l := range p.lost {
		fmt.Fprintf(w, "  DRCluster %s: %s\n", l.drc.Name, describeLost(l))
	}
	for _, pol := range p.policies {
		fmt.Fprintf(w, "  DRPolicy %s: %s and %s, every %s, %d S3 profile(s)\n", pol.Name, pol.Spec.DRClusters[0], pol.Spec.DRClusters[1],
			pol.Spec.SchedulingInterval, len(pol.Spec.S3Profiles))
	}
	for _, d := range p.drpcs {
		fmt.Fprintf(w, "  DRPlacementControl %s/%s (DRPolicy %s): %s\n", d.drpc.Namespace, d.drpc.Name, d.drpc.Spec.DRPolicyRef.Name, describeDRPC(d))
	}
	for _, n := range p.notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	fmt.Fprintf(w, "Objects that exist on the hub are kept as they are; no VolumeReplicationGroup is written.\n")
}

// describeDRPC says what becomes of a DRPlacementControl: one the hub holds is kept (but for
// the spec that adopts a promotion made without the hub), and the hub goes on from its status;
// one to create is described by its groups' state.
func describeDRPC(d drpcPlan) string {
	e := d.existing
	if e == nil {
		return describeState(d)
	}
	phase := "no status yet"
	if e.Status.Phase != "" {
		phase = fmt.Sprintf("%s on %s", e.Status.Phase, e.Status.CurrentPrimary)
	}
	out := fmt.Sprintf("exists on the hub (%s): kept, the hub goes on from its status", phase)
	if d.adopts(e) {
		out += fmt.Sprintf("; asked for the failover to %s, which adopts the promotion made there without the hub", d.state.Primary)
	}
	return out
}

// describeState says where the groups say the application is, and the action the spec asks.
func describeState(d drpcPlan) string {
	s, spec := d.state, d.drpc.Spec
	action := fmt.Sprintf("preferredCluster %s", spec.PreferredCluster)
	switch spec.Action {
	case v1alpha1.ActionFailover:
		action = "action Failover to " + spec.FailoverCluster
	case v1alpha1.ActionRelocate:
		action = "action Relocate to " + spec.PreferredCluster
	}
	switch {
	case s.Wait != "":
		return fmt.Sprintf("%s; its groups do not tell where it runs (%s): the hub waits", action, s.Wait)
	case s.None:
		return action + "; no group found on the clusters read: the hub deploys it"
	case d.marked:
		return fmt.Sprintf("promoted without the hub on %s: %s, which the hub finishes as its failover (FailedOver on %s)", s.Primary, action, s.Primary)
	}
	return fmt.Sprintf("%s on %s (%s)", s.Phase, s.Primary, action)
}

// joinCluster joins one cluster as drover cluster join does. When the hub holds no kubeconfig
// for it yet, the Secret the old hub's tokens are bound to is deleted first, which revokes them.
func joinCluster(ctx context.Context, w io.Writer, j joinPlan, p *plan, o Options) error {
	if err := revokeOldTokens(ctx, w, j); err != nil {
		return err
	}
	peers := map[string]join.Cluster{}
	for _, other := range p.joins {
		if other.name != j.name {
			peers[other.name] = other.conn
		}
	}
	profile := j.profile
	profile.SecretNamespace, profile.SecretName = "", ""
	err := join.Join(ctx, join.Options{
		Name: j.name, Hub: o.Hub, Managed: j.conn, Server: o.Servers[j.name], Region: j.region, S3: profile,
		Peers: peers, Silent: p.lostNames(), AllowInsecureKubeconfig: o.AllowInsecureKubeconfig, Out: w,
		// The restore writes the DRPolicies from the groups' records.
		NoPolicyHint: true,
	})
	if err != nil {
		return fmt.Errorf("failed to join %s (run the restore again once fixed; what is done is kept): %w", j.name, err)
	}
	return nil
}

// revokeOldTokens deletes, on the managed cluster, the Secret every token of the hub's
// identity is bound to, when the new hub holds no kubeconfig for the cluster: the old hub's
// tokens are refused from then on. Join makes the Secret again and binds the new token to it.
func revokeOldTokens(ctx context.Context, w io.Writer, j joinPlan) error {
	if !j.revoke {
		return nil
	}
	managed, err := newClient(j.conn.Config)
	if err != nil {
		return err
	}
	secret := &corev1.Secret{}
	err = managed.Get(ctx, client.ObjectKey{Namespace: join.DefaultNamespace, Name: join.TokenSecretName}, secret)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("failed to read Secret %s/%s on %s: %w", join.DefaultNamespace, join.TokenSecretName, j.name, err)
	case secret.Labels[join.LabelCluster] != j.name:
		return nil
	}
	if err := managed.Delete(ctx, secret, client.Preconditions{UID: &secret.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("failed to delete Secret %s/%s on %s, which revokes the old hub's tokens: %w", join.DefaultNamespace, join.TokenSecretName, j.name, err)
	}
	fmt.Fprintf(w, "managed cluster %s: Secret %s/%s deleted: every token of the old hub is revoked\n", j.name, join.DefaultNamespace, join.TokenSecretName)
	return nil
}

// checkHub reads, for each cluster to join, whether the hub holds a kubeconfig for it already
// (a restore run before): the old hub's tokens are revoked only when it holds none.
func (p *plan) checkHub(ctx context.Context, hub client.Client) error {
	for i := range p.joins {
		j := &p.joins[i]
		key := client.ObjectKey{Namespace: join.DefaultNamespace, Name: join.KubeconfigSecretName(j.name)}
		err := hub.Get(ctx, key, &corev1.Secret{})
		switch {
		case apierrors.IsNotFound(err):
			j.revoke = true
		case err != nil:
			return cli.Unreachable(fmt.Errorf("failed to read Secret %s on the new hub: %w; check --kubeconfig and that drover's hub is installed there", key, err))
		}
		drc, err := hubDRCluster(ctx, hub, j.name)
		if err != nil {
			return err
		}
		if drc != nil && drc.Spec.Lost != nil {
			_, j.byRestore = drc.Annotations[v1alpha1.AnnotationLostDeclaredByRestore]
			j.lost = drc.Spec.Lost
		}
	}
	for i := range p.lost {
		drc, err := hubDRCluster(ctx, hub, p.lost[i].drc.Name)
		if err != nil {
			return err
		}
		p.lost[i].existing = drc
	}
	for i := range p.drpcs {
		d := &v1alpha1.DRPlacementControl{}
		err := hub.Get(ctx, client.ObjectKeyFromObject(p.drpcs[i].drpc), d)
		switch {
		case err == nil:
			p.drpcs[i].existing = d
		case !apierrors.IsNotFound(err):
			return cli.Unreachable(fmt.Errorf("failed to read DRPlacementControl %s on the new hub: %w", client.ObjectKeyFromObject(p.drpcs[i].drpc), err))
		}
	}
	return nil
}

// hubDRCluster is the hub's DRCluster of that name; nil when there is none.
func hubDRCluster(ctx context.Context, hub client.Client, name string) (*v1alpha1.DRCluster, error) {
	drc := &v1alpha1.DRCluster{}
	err := hub.Get(ctx, client.ObjectKey{Name: name}, drc)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, cli.Unreachable(fmt.Errorf("failed to read DRCluster %s on the new hub: %w; check --kubeconfig and that drover's hub is installed there", name, err))
	}
	return drc, nil
}

// describeLift says what becomes of the declaration that an answering cluster is lost.
func describeLift(j joinPlan) string {
	switch {
	case j.lost == nil:
		return ""
	case j.byRestore:
		return "; it answers now: the restore's declaration that it is lost is lifted once it is joined, and the hub demotes its groups whose application runs on the peer"
	}
	return fmt.Sprintf("; declared lost by a person (%s), not by a restore: the declaration is kept (drover cluster lost %s --undo --yes lifts it, once its Fenced condition says no group is left to remove)",
		j.lost.Reason, j.name)
}

// describeLost says what the restore does for a cluster that does not answer.
func describeLost(l lostPlan) string {
	if l.existing != nil {
		state := "not declared lost (the hub may hold its kubeconfig: it answers the hub, or declare it lost with drover cluster lost)"
		if l.existing.Spec.Lost != nil {
			state = "declared lost"
		}
		return fmt.Sprintf("does not answer (%v); the hub holds its DRCluster, %s: kept as it is", l.why, state)
	}
	s := l.drc.Spec
	return fmt.Sprintf("does not answer (%v): created declared lost from the records (region %s, S3 profile %s), with no kubeconfig: "+
		"nothing is written on it; the DRPolicies pairing it are Validated and their applications go on on the peer; once it answers, run this restore again, which joins it",
		l.why, s.Region, s.S3ProfileName)
}

// lostNames are the clusters that do not answer and that the records name: the answering
// clusters' joins skip them as peers.
func (p *plan) lostNames() []string {
	var out []string
	for _, l := range p.lost {
		out = append(out, l.drc.Name)
	}
	return out
}

// createLost creates the DRCluster of a cluster that does not answer, declared lost and marked
// as the restore's declaration; one that exists is kept as it is.
func createLost(ctx context.Context, w io.Writer, hub client.Client, l lostPlan, now time.Time) error {
	if l.existing != nil {
		fmt.Fprintf(w, "the hub: DRCluster %s exists, kept\n", l.drc.Name)
		return nil
	}
	drc := l.drc.DeepCopy()
	drc.Annotations = map[string]string{v1alpha1.AnnotationLostDeclaredByRestore: now.UTC().Format(time.RFC3339)}
	err := hub.Create(ctx, drc)
	switch {
	case apierrors.IsAlreadyExists(err):
		fmt.Fprintf(w, "the hub: DRCluster %s exists, kept\n", drc.Name)
	case err != nil:
		return fmt.Errorf("failed to create DRCluster %s, declared lost, on the hub: %w", drc.Name, err)
	default:
		fmt.Fprintf(w, "the hub: DRCluster %s created, declared lost: it did not answer\n", drc.Name)
	}
	return nil
}

// liftLost lifts, once an answering cluster is joined, the declaration that it is lost when a
// restore made it; a person's is kept. The hub then treats the cluster as any peer that
// answers again: its settled DRPlacementControls demote the groups there whose application runs
// on the peer, and the store epochs fence them meanwhile (docs/decisions/0003).
func liftLost(ctx context.Context, w io.Writer, hub client.Client, j joinPlan) error {
	drc := &v1alpha1.DRCluster{}
	if err := hub.Get(ctx, client.ObjectKey{Name: j.name}, drc); err != nil {
		return fmt.Errorf("failed to read DRCluster %s on the hub: %w", j.name, err)
	}
	switch _, byRestore := drc.Annotations[v1alpha1.AnnotationLostDeclaredByRestore]; {
	case drc.Spec.Lost == nil && !byRestore:
		return nil
	case drc.Spec.Lost != nil && !byRestore:
		fmt.Fprintf(w, "the hub: DRCluster %s is declared lost by a person (%s), not by a restore: kept; lift it with drover cluster lost %s --undo --yes once its Fenced condition says no group is left to remove\n",
			j.name, drc.Spec.Lost.Reason, j.name)
		return nil
	}
	before := drc.DeepCopy()
	drc.Spec.Lost = nil
	delete(drc.Annotations, v1alpha1.AnnotationLostDeclaredByRestore)
	if err := hub.Patch(ctx, drc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("failed to lift the restore's declaration that DRCluster %s is lost (run the restore again): %w", j.name, err)
	}
	fmt.Fprintf(w, "the hub: DRCluster %s answers and is joined: the restore's declaration that it is lost is lifted\n", j.name)
	return nil
}

// createPolicy creates a DRPolicy that is missing.
func createPolicy(ctx context.Context, w io.Writer, hub client.Client, pol *v1alpha1.DRPolicy) error {
	err := hub.Create(ctx, pol.DeepCopy())
	switch {
	case apierrors.IsAlreadyExists(err):
		fmt.Fprintf(w, "the hub: DRPolicy %s exists, kept\n", pol.Name)
	case err != nil:
		return fmt.Errorf("failed to create DRPolicy %s on the hub: %w", pol.Name, err)
	default:
		fmt.Fprintf(w, "the hub: DRPolicy %s created\n", pol.Name)
	}
	return nil
}

// ensureDRPC creates a DRPlacementControl that is missing, marked restored. One that exists is
// kept, but when a group of it was promoted without the hub and its spec does not ask for that
// failover, it is given the spec that adopts it (docs/decisions/0014).
func ensureDRPC(ctx context.Context, w io.Writer, hub client.Client, d drpcPlan, now time.Time) error {
	key := client.ObjectKeyFromObject(d.drpc)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: key.Namespace}}
	if err := hub.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create namespace %s on the hub: %w", key.Namespace, err)
	}
	existing := &v1alpha1.DRPlacementControl{}
	err := hub.Get(ctx, key, existing)
	switch {
	case apierrors.IsNotFound(err):
		created := d.drpc.DeepCopy()
		created.Annotations = map[string]string{hubrecord.AnnotationRestored: now.UTC().Format(time.RFC3339)}
		if err := hub.Create(ctx, created); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("failed to create DRPlacementControl %s on the hub: %w", key, err)
		}
		fmt.Fprintf(w, "the hub: DRPlacementControl %s created\n", key)
		return nil
	case err != nil:
		return fmt.Errorf("failed to read DRPlacementControl %s on the hub: %w", key, err)
	}
	to := d.state.Primary
	if !d.adopts(existing) {
		fmt.Fprintf(w, "the hub: DRPlacementControl %s exists, kept\n", key)
		return nil
	}
	before := existing.DeepCopy()
	existing.Spec.Action, existing.Spec.FailoverCluster = v1alpha1.ActionFailover, to
	if err := hub.Patch(ctx, existing, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("failed to ask DRPlacementControl %s for the failover to %s: %w", key, to, err)
	}
	fmt.Fprintf(w, "the hub: DRPlacementControl %s exists: asked for the failover to %s, which adopts the promotion made there without the hub\n", key, to)
	return nil
}
