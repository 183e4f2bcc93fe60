package hubless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
)

// Defaults of a failover without the hub.
const (
	// DefaultTimeout is how long Failover waits for the target's group to be primary with its
	// data ready.
	DefaultTimeout = 10 * time.Minute
	// peerTimeout is how long the old primary is given to answer.
	peerTimeout = 10 * time.Second
)

// FailoverOptions are drover failover --without-hub's.
type FailoverOptions struct {
	// App is the application: its DRPlacementControl's name, which names its groups.
	App string
	// Namespace is -n; empty: the target kubeconfig context's, else "default".
	Namespace string
	// To is the cluster to fail over to; From names the old primary, when known.
	To, From string
	// Clusters are the --cluster-kubeconfig values: the target's, and optionally the old
	// primary's.
	Clusters []string
	// DryRun prints the plan and changes nothing.
	DryRun bool
	// Confirm asks the person to confirm on a terminal, or takes --yes.
	Confirm *cli.Confirmation
	// Timeout bounds the wait for the promotion; 0 means DefaultTimeout.
	Timeout time.Duration
	// Log receives the progress lines; nil means the output.
	Log io.Writer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// target is the failover's target as read: its cluster, client and group.
type target struct {
	cluster Cluster
	client  client.Client
	vrg     *v1alpha1.VolumeReplicationGroup
	// resumed is true when the group was promoted without the hub already (this command run
	// before): the command follows that promotion.
	resumed bool
}

// Failover fails an application over to o.To with no hub: it reads the target's group, checks
// from the target's own view what the hub checks, asks the old primary when a kubeconfig for
// it is given (and refuses while it answers as primary), prints the plan and the expected
// loss, and after confirmation writes into the target's group what the hub writes for a
// failover, with the mark that keeps a returning hub from acting on an older status. Then it
// follows the group until it is primary with its data ready.
func Failover(ctx context.Context, w io.Writer, o FailoverOptions) error {
	to, peer, err := failoverClusters(o)
	if err != nil {
		return err
	}
	t, err := readTarget(ctx, to, &o)
	if err != nil {
		return err
	}
	peerNote, err := checkPeer(ctx, peer, o)
	if err != nil {
		return err
	}
	printPlan(w, t, peerNote, o)
	if o.DryRun {
		return nil
	}
	if !t.resumed {
		what := fmt.Sprintf("promote %s/%s on %s without the hub, losing what %s wrote after the last sync", o.Namespace, o.App, o.To, cli.OrDefault(o.From, "the old primary"))
		if err := o.Confirm.Confirm(what, o.To); err != nil {
			return err
		}
		if err := promote(ctx, t, o); err != nil {
			return err
		}
		fmt.Fprintf(w, "Asked %s's group to be primary (generation %d); following it:\n", o.To, t.vrg.Generation)
	}
	return wait(ctx, w, t, o)
}

// failoverClusters picks the target's and the old primary's kubeconfigs: the one named o.To
// (or the only one, unnamed), and at most one other.
func failoverClusters(o FailoverOptions) (to Cluster, peer *Cluster, err error) {
	if o.App == "" || o.To == "" {
		return Cluster{}, nil, cli.Usage(errors.New("failover --without-hub needs APP and --to CLUSTER"))
	}
	clusters, err := ParseClusters(o.Clusters)
	if err != nil {
		return Cluster{}, nil, err
	}
	if len(clusters) == 1 && !clusters[0].named {
		clusters[0].Name = o.To
	}
	if len(clusters) > 2 {
		return Cluster{}, nil, cli.Usage(errors.New("failover --without-hub takes at most two --cluster-kubeconfig: the target's and the old primary's"))
	}
	found := false
	for i := range clusters {
		if clusters[i].Name == o.To {
			to, found = clusters[i], true
			continue
		}
		peer = &clusters[i]
	}
	if !found {
		return Cluster{}, nil, cli.Usage(fmt.Errorf("no --cluster-kubeconfig for %s, the target: pass %s=FILE", o.To, o.To))
	}
	return to, peer, nil
}

// readTarget reads the target's group and checks it can be failed over to: it exists and is
// secondary, settled at its spec; or it was promoted without the hub already, and is followed.
func readTarget(ctx context.Context, c Cluster, o *FailoverOptions) (*target, error) {
	cl, ns, err := c.Client(o.Namespace)
	if err != nil {
		return nil, cli.Usage(err)
	}
	o.Namespace = ns
	vrg := &v1alpha1.VolumeReplicationGroup{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.App}, vrg); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, cli.Refused(fmt.Errorf("%s has no VolumeReplicationGroup %s/%s: the hub names an application's groups after its DRPlacementControl, in its namespace; check APP and -n (drover status --cluster-kubeconfig %s -n %s lists the groups there)",
				c.Name, ns, o.App, c.Kubeconfig, ns))
		}
		return nil, cli.Unreachable(fmt.Errorf("failed to read VolumeReplicationGroup %s/%s on %s: %w", ns, o.App, c.Name, err))
	}
	t := &target{cluster: c, client: cl, vrg: vrg}
	mark, err := v1alpha1.PromotedWithoutHubMark(vrg)
	switch {
	case err != nil:
		return nil, cli.Refused(err)
	case mark != nil:
		t.resumed = true
		return t, nil
	case vrg.Spec.ReplicationState == v1alpha1.ReplicationStatePrimary:
		return nil, cli.Refused(fmt.Errorf("%s's group %s/%s is primary already (action %s): the application runs there; nothing to fail over",
			c.Name, ns, o.App, cli.Dash(string(vrg.Spec.Action))))
	case vrg.Status.State != v1alpha1.StateSecondary || vrg.Status.ObservedGeneration != vrg.Generation:
		return nil, cli.Refused(fmt.Errorf("%s's group %s/%s is not a settled secondary (asked %s, state %s, generation %d observed %d): it holds no copy to promote yet; see drover status %s --cluster-kubeconfig %s",
			c.Name, ns, o.App, vrg.Spec.ReplicationState, cli.Dash(string(vrg.Status.State)), vrg.Generation, vrg.Status.ObservedGeneration, o.App, c.Kubeconfig))
	case vrg.Spec.FinalSyncRequest != "":
		return nil, cli.Refused(fmt.Errorf("%s's group %s/%s is the source of a relocation's final sync (%s), not its target", c.Name, ns, o.App, vrg.Spec.FinalSyncRequest))
	}
	return t, nil
}

// checkPeer asks the old primary, when its kubeconfig is given, and refuses while its group
// answers as primary. It returns what the plan says of the old primary.
func checkPeer(ctx context.Context, peer *Cluster, o FailoverOptions) (string, error) {
	from := cli.OrDefault(o.From, "the old primary")
	fenced := fmt.Sprintf("when %s returns, its agent finds %s's newer epoch in the stores and writes nothing to them (a stale primary) until a hub demotes it; "+
		"until then a workload still running there writes to a copy that is discarded", from, o.To)
	if peer == nil {
		return fmt.Sprintf("%s is not asked (no kubeconfig given) and is treated as lost: make sure it is down or cut off; %s", from, fenced), nil
	}
	from = peer.Name
	cl, _, err := peer.Client(o.Namespace)
	if err != nil {
		return "", cli.Usage(err)
	}
	pctx, cancel := context.WithTimeout(ctx, peerTimeout)
	defer cancel()
	vrg := &v1alpha1.VolumeReplicationGroup{}
	err = cl.Get(pctx, client.ObjectKey{Namespace: o.Namespace, Name: o.App}, vrg)
	switch {
	case client.IgnoreNotFound(err) == nil && err != nil:
		return fmt.Sprintf("%s answers and holds no group of the application", from), nil
	case err != nil:
		return fmt.Sprintf("%s does not answer (%v) and is treated as lost; %s", from, err, fenced), nil
	case vrg.Spec.ReplicationState == v1alpha1.ReplicationStatePrimary || vrg.Status.State == v1alpha1.StatePrimary:
		return "", cli.Refused(fmt.Errorf("%s answers and its group %s/%s is primary (asked %s, state %s): promoting %s now would leave two writable primaries, since the storage forces a promotion. "+
			"Fail over through the hub, which demotes %s first; or, with the hub lost, stop %s (or cut it off) and run this again without its kubeconfig. Nothing was changed",
			from, o.Namespace, o.App, vrg.Spec.ReplicationState, cli.Dash(string(vrg.Status.State)), o.To, from, from))
	}
	return fmt.Sprintf("%s answers and its group is %s already", from, cli.Dash(string(vrg.Status.State))), nil
}

// printPlan prints what the failover does and what it loses.
func printPlan(w io.Writer, t *target, peerNote string, o FailoverOptions) {
	now := cli.Now(o.Now)
	fmt.Fprintf(w, "Failover of %s/%s to %s WITHOUT THE HUB\n", o.Namespace, o.App, o.To)
	if t.resumed {
		mark, _ := v1alpha1.PromotedWithoutHubMark(t.vrg)
		fmt.Fprintf(w, "  %s's group was promoted without the hub at %s already: following it.\n", o.To, cli.Clock(mark.At.Time))
		return
	}
	fmt.Fprintf(w, "  1. %s's VolumeReplicationGroup %s/%s: secondary -> primary, action Failover, as the hub writes it, marked %s\n",
		o.To, o.Namespace, o.App, v1alpha1.AnnotationPromotedWithoutHub)
	fmt.Fprintf(w, "  2. %s's agent claims the group's next epoch in the stores, restores the PVs, PVCs and objects from them and promotes the volumes\n", o.To)
	fmt.Fprintf(w, "  3. %s\n", peerNote)
	fmt.Fprintf(w, "Expected loss: %s\n", expectedLoss(t.vrg, now))
	fmt.Fprintf(w, "A hub that returns does not act on this application until its DRPlacementControl asks for a failover to %s "+
		"(drover failover %s -n %s --to %s, on the hub), which adopts this promotion and demotes the old primary.\n", o.To, o.App, o.Namespace, o.To)
}

// promote writes the failover into the target's group with its mark, in one patch under an
// optimistic lock: the spec changes, so its generation becomes the next, which the mark names.
func promote(ctx context.Context, t *target, o FailoverOptions) error {
	before := t.vrg.DeepCopy()
	vrg := t.vrg
	vrg.Spec = FailoverSpec(vrg.Spec)
	mark := v1alpha1.PromotedWithoutHub{Cluster: o.To, From: o.From, Generation: vrg.Generation + 1,
		At: metav1.NewTime(cli.Now(o.Now).Truncate(time.Second)), LastGroupSyncTime: before.Status.LastGroupSyncTime}
	raw, err := json.Marshal(mark)
	if err != nil {
		return fmt.Errorf("failed to encode the mark: %w", err)
	}
	if vrg.Annotations == nil {
		vrg.Annotations = map[string]string{}
	}
	vrg.Annotations[v1alpha1.AnnotationPromotedWithoutHub] = string(raw)
	if err := t.client.Patch(ctx, vrg, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("failed to patch VolumeReplicationGroup %s/%s on %s (nothing was changed; run the command again): %w", before.Namespace, before.Name, o.To, err)
	}
	if vrg.Generation != mark.Generation {
		return fmt.Errorf("VolumeReplicationGroup %s/%s on %s is at generation %d, not %d: another writer changed it at the same time; check it with drover status %s --cluster-kubeconfig %s",
			vrg.Namespace, vrg.Name, o.To, vrg.Generation, mark.Generation, o.App, t.cluster.Kubeconfig)
	}
	return nil
}

// FailoverSpec is the spec the hub writes into a failover's target group, from the group's
// spec as a secondary: primary with action Failover and no final sync; a primary receives no
// VolSync PVCs (the hub's hand-off keeps only the destinations it sends to, which a secondary
// has none of). Everything else the hub wrote from the DRPlacementControl and its DRPolicy is
// kept as it is.
func FailoverSpec(secondary v1alpha1.VolumeReplicationGroupSpec) v1alpha1.VolumeReplicationGroupSpec {
	spec := *secondary.DeepCopy()
	spec.ReplicationState, spec.Action, spec.FinalSyncRequest = v1alpha1.ReplicationStatePrimary, v1alpha1.ActionFailover, ""
	if spec.VolSync != nil {
		spec.VolSync.ReceivePVCs = nil
		// The hub leaves volSync out when neither the policy nor the DRPlacementControl sets
		// any of its fields: an empty one left here would differ from the hub's spec, and the
		// hub adopting the promotion would rewrite the group, which its agent takes for a new
		// promotion (another epoch claimed, the objects restored again).
		if equality.Semantic.DeepEqual(*spec.VolSync, v1alpha1.VolSyncSpec{}) {
			spec.VolSync = nil
		}
	}
	return spec
}
