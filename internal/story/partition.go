package story

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab/records"
)

// The partition case: drover cannot know whether a cluster it cannot reach is lost or still
// runs. The story partitions the primary (the lab's network partition: the hub and the peer
// cannot reach it while it runs, and neither storage mirrors to the other), fails over, and
// heals; the checks prove what drover must keep true when it cannot know.

// partition is what the partition step learned, for the heal: the writers cut off, their
// volumes on the cut-off cluster, their records at the partition and at the end of the
// failover, and where the application went.
type partition struct {
	ws         []writer
	handles    map[string]string
	atCut      map[string]records.Report
	atFailover map[string]records.Report
	to         string
}

// FailoverDuringPartition partitions from, which keeps running with its application writing,
// and fails the application over to the other cluster. The hub cannot reach from, so it
// promotes the target as for a lost cluster and says so (the DRPlacementControl's
// PromotingWithoutDemotion event and PeerReady); the storage forces the promotion, so both
// clusters hold writable primaries until the heal: the watcher must report that overlap
// (Splits). The target's records are checked as a failover's: every record up to the last
// group sync is there, and none that from wrote after the partition.
func (r *Run) FailoverDuringPartition(ctx context.Context, from string) Step {
	to := r.other(from)
	step := Step{Action: "failover-partitioned", From: from, To: to}
	if r.env.Partition == nil || r.env.Heal == nil {
		step.Err = errors.New("the lab has no network partition (Env.Partition, Env.Heal)")
		return r.record(step)
	}
	ws, handles, lastSync, err := r.writingAndSynced(ctx, from)
	if err != nil {
		step.Err = err
		return r.record(step)
	}
	r.say("failover: partitioning %s from the hub and %s (it keeps running); last group sync %s ago",
		from, to, time.Since(lastSync).Round(100*time.Millisecond))
	p := &partition{ws: ws, handles: handles, to: to}
	r.mu.Lock()
	r.cut[from] = p
	r.mu.Unlock()
	if err := r.env.Partition(from); err != nil {
		step.Err = fmt.Errorf("failed to partition %s: %w", from, err)
		return r.record(step)
	}
	step.LossBound = time.Since(lastSync)
	if p.atCut, step.Err = r.reports(from, handles); step.Err != nil {
		return r.record(step)
	}
	began := time.Now()
	r.say("failover: asking drover to fail over to %s while %s is partitioned", to, from)
	if step.Err = r.failOverTo(ctx, to); step.Err != nil {
		return r.record(step)
	}
	step.Duration = time.Since(began)
	if p.atFailover, step.Err = r.reports(from, handles); step.Err != nil {
		return r.record(step)
	}
	errs := []error{r.checkFailover(ctx, &step, ws, p.atCut, lastSync, "the partition"), r.saidWithoutDemotion(ctx, from, to)}
	if _, _, err := r.writing(ctx, to); err != nil {
		errs = append(errs, err)
	}
	step.Err = errors.Join(append(errs, r.splitReported(ctx, from), r.fencedThere(ctx, from, to))...)
	return r.record(step)
}

// fencedThere checks that the cut-off cluster's agent knows itself a stale primary: it still
// reaches the peer's S3 store, where the promotion claimed a newer epoch, so its group reports
// SplitBrain and writes nothing to any store (the new primary's metadata stays as it wrote it).
func (r *Run) fencedThere(ctx context.Context, cluster, to string) error {
	return r.poll(ctx, pollInterval, func(ctx context.Context) error {
		group := &v1alpha1.VolumeReplicationGroup{}
		if err := r.env.Clusters[cluster].Get(ctx, r.key, group); err != nil {
			return fmt.Errorf("failed to get the VolumeReplicationGroup on %s: %w", cluster, err)
		}
		c := apimeta.FindStatusCondition(group.Status.Conditions, v1alpha1.ConditionClusterDataProtected)
		if c == nil || c.Reason != v1alpha1.ReasonSplitBrain || !strings.Contains(c.Message, to) {
			return fmt.Errorf("%s's VolumeReplicationGroup does not report the split brain (%s holds a newer epoch in its store): %v", cluster, to, c)
		}
		return nil
	})
}

// reports reads the records of each volume (handles, by PVC) on a cluster.
func (r *Run) reports(cluster string, handles map[string]string) (map[string]records.Report, error) {
	out := map[string]records.Report{}
	for pvc, h := range handles {
		rep, err := r.report(cluster, h)
		if err != nil {
			return nil, err
		}
		out[pvc] = rep
	}
	return out, nil
}

// saidWithoutDemotion checks that the DRPlacementControl says the failover promoted to without
// demoting from: the hub's PromotingWithoutDemotion event naming from, and PeerReady False
// because from is unreachable.
func (r *Run) saidWithoutDemotion(ctx context.Context, from, to string) error {
	return r.poll(ctx, pollInterval, func(ctx context.Context) error {
		list := &eventsv1.EventList{}
		if err := r.env.Hub.List(ctx, list, client.InNamespace(r.key.Namespace)); err != nil {
			return fmt.Errorf("failed to list the events of DRPlacementControl %s: %w", r.key, err)
		}
		said := false
		for _, e := range list.Items {
			said = said || (e.Regarding.Kind == "DRPlacementControl" && e.Regarding.Name == r.key.Name &&
				e.Reason == v1alpha1.EventPromotingWithoutDemotion && strings.Contains(e.Note, from))
		}
		if !said {
			return fmt.Errorf("the DRPlacementControl has no %s event saying that %s was promoted without demoting %s", v1alpha1.EventPromotingWithoutDemotion, to, from)
		}
		d, err := r.drpc(ctx)
		if err != nil {
			return err
		}
		if c := condition(d, v1alpha1.ConditionPeerReady); c.Reason != v1alpha1.ReasonPeerUnreachable || !strings.Contains(c.Message, from) {
			return fmt.Errorf("PeerReady does not say that %s is unreachable: %s %s: %s", from, c.Status, c.Reason, c.Message)
		}
		return nil
	})
}

// splitReported waits until the watcher has reported two writable primaries during the
// partition of cluster: the storage forced the promotion, so it must see them.
func (r *Run) splitReported(ctx context.Context, cluster string) error {
	return r.poll(ctx, pollInterval, func(context.Context) error {
		splits := r.Splits()
		if len(splits) == 0 {
			return fmt.Errorf("the watcher reported no two writable primaries while %s is partitioned: the storage forces the promotion, so it must see them", cluster)
		}
		r.say("  the watcher reports: %s", splits[0])
		return nil
	})
}

// Heal ends cluster's partition and waits, with no human step, until drover has demoted it:
// the DRPlacementControl settled with the peer primary, PeerReady and Protected, cluster's
// group Secondary and the application no longer running there. It checks that the application
// went on writing on cluster after the failover, and that none of what it wrote there after
// the partition reached the primary's volumes.
func (r *Run) Heal(ctx context.Context, cluster string) Step {
	step := Step{Action: "heal", From: cluster, To: cluster}
	r.mu.Lock()
	p := r.cut[cluster]
	r.mu.Unlock()
	if p == nil {
		step.Err = fmt.Errorf("%s is not partitioned", cluster)
		return r.record(step)
	}
	if step.Err = r.wroteAfterFailover(ctx, cluster, p); step.Err != nil {
		return r.record(step)
	}
	began := time.Now()
	r.say("heal: ending %s's partition", cluster)
	if err := r.env.Heal(cluster); err != nil {
		step.Err = fmt.Errorf("failed to heal %s: %w", cluster, err)
		return r.record(step)
	}
	r.mu.Lock()
	delete(r.cut, cluster)
	r.back[cluster] = time.Now()
	r.mu.Unlock()
	step.Err = r.await(ctx, "heal", func(d *v1alpha1.DRPlacementControl) bool {
		return settled(d, v1alpha1.PhaseFailedOver, p.to) && isTrue(d, v1alpha1.ConditionPeerReady) && isTrue(d, v1alpha1.ConditionProtected)
	})
	step.Duration = time.Since(began)
	if step.Err == nil {
		step.Err = errors.Join(r.demotedOn(ctx, cluster), r.neverReached(ctx, cluster, p), r.discarded(ctx, cluster, p))
	}
	if step.Err == nil {
		_, _, step.Err = r.writing(ctx, p.to)
	}
	return r.record(step)
}

// wroteAfterFailover waits until every writer cut off on cluster has written a record there
// after the failover: the writes that must never reach the new primary.
func (r *Run) wroteAfterFailover(ctx context.Context, cluster string, p *partition) error {
	return r.poll(ctx, pollInterval, func(context.Context) error {
		now, err := r.reports(cluster, p.handles)
		if err != nil {
			return err
		}
		for _, w := range p.ws {
			for _, pvc := range w.pvcs {
				then, _ := p.atFailover[pvc].Writer(w.id)
				if got, _ := now[pvc].Writer(w.id); got.LastSeq <= then.LastSeq {
					return fmt.Errorf("%s: %s's writer %s wrote nothing after the failover (last record %d): the partition case needs its writes", pvc, cluster, w.id, got.LastSeq)
				}
			}
		}
		return nil
	})
}

// demotedOn checks that cluster's group is Secondary for its current spec and the application
// runs there no more.
func (r *Run) demotedOn(ctx context.Context, cluster string) error {
	return r.poll(ctx, pollInterval, func(ctx context.Context) error {
		group := &v1alpha1.VolumeReplicationGroup{}
		if err := r.env.Clusters[cluster].Get(ctx, r.key, group); err != nil {
			return fmt.Errorf("failed to get the VolumeReplicationGroup on %s: %w", cluster, err)
		}
		if group.Spec.ReplicationState != v1alpha1.ReplicationStateSecondary || group.Status.State != v1alpha1.StateSecondary ||
			group.Status.ObservedGeneration != group.Generation {
			return fmt.Errorf("%s's VolumeReplicationGroup is not demoted: spec %s, state %q at generation %d of %d",
				cluster, group.Spec.ReplicationState, group.Status.State, group.Status.ObservedGeneration, group.Generation)
		}
		ws, err := r.writers(ctx, cluster)
		if err != nil {
			return err
		}
		if len(ws) > 0 {
			return fmt.Errorf("the application still runs on %s (pod %s) after its group is Secondary", cluster, ws[0].pod)
		}
		return nil
	})
}

// neverReached checks that the primary's volumes hold no record that the writers cut off on
// cluster wrote after the partition.
func (r *Run) neverReached(ctx context.Context, cluster string, p *partition) error {
	return r.onTarget(ctx, p.to, p.ws, func(pvc string, w writer, kept records.WriterReport) error {
		atCut, _ := p.atCut[pvc].Writer(w.id)
		if kept.LastSeq > atCut.LastSeq {
			return fmt.Errorf("%s: %s holds record %d of %s, which %s wrote after the partition (up to %d before it): its writes reached the new primary",
				pvc, p.to, kept.LastSeq, w.id, cluster, atCut.LastSeq)
		}
		return nil
	})
}

// discarded waits until the demoted cluster's volumes, resynced from the new primary, hold no
// record that its writers wrote after the partition: stray writes are discarded.
func (r *Run) discarded(ctx context.Context, cluster string, p *partition) error {
	return r.poll(ctx, pollInterval, func(context.Context) error {
		now, err := r.reports(cluster, p.handles)
		if err != nil {
			return err
		}
		for _, w := range p.ws {
			for _, pvc := range w.pvcs {
				atCut, _ := p.atCut[pvc].Writer(w.id)
				if got, _ := now[pvc].Writer(w.id); got.LastSeq > atCut.LastSeq {
					return fmt.Errorf("%s: %s still holds record %d of %s, written after the partition (up to %d before it): the resync from %s has not discarded it",
						pvc, cluster, got.LastSeq, w.id, atCut.LastSeq, p.to)
				}
			}
		}
		return nil
	})
}
