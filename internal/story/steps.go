package story

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab/records"
	"github.com/drover-io/drover/internal/lab/storage"
)

// Protect creates the application's DRPlacementControl preferring home and waits until it is
// Deployed, Protected and PeerReady with the writers writing on home.
func (r *Run) Protect(ctx context.Context) Step {
	began := time.Now()
	step := Step{Action: "protect", From: r.home, To: r.home}
	d := r.drpcObject()
	r.say("protect: DRPlacementControl %s with policy %s, preferred cluster %s", r.key, r.c.Policy, r.home)
	if err := r.env.Hub.Create(ctx, d); err != nil {
		step.Err = fmt.Errorf("failed to create the DRPlacementControl: %w", err)
		return r.record(step)
	}
	if _, _, err := r.writing(ctx, r.home); err != nil {
		step.Err = err
		return r.record(step)
	}
	// PeerReady turns True once, when the peer really can take over: True, then False again
	// before the application is protected, is a false promise a person may have acted on.
	var peerReadySince time.Time
	var flap error
	step.Err = r.await(ctx, "protect", func(d *v1alpha1.DRPlacementControl) bool {
		switch ready := isTrue(d, v1alpha1.ConditionPeerReady); {
		case ready && peerReadySince.IsZero():
			peerReadySince = time.Now()
		case !ready && !peerReadySince.IsZero() && flap == nil:
			flap = fmt.Errorf("PeerReady turned True at %s, then False again: %s",
				peerReadySince.Sub(began).Round(100*time.Millisecond), condition(d, v1alpha1.ConditionPeerReady).Message)
		}
		return settled(d, v1alpha1.PhaseDeployed, r.home) && isTrue(d, v1alpha1.ConditionProtected) && isTrue(d, v1alpha1.ConditionPeerReady)
	})
	if step.Err == nil {
		step.Err = flap
	}
	step.Duration = time.Since(began)
	return r.record(step)
}

// drpcObject is the application's DRPlacementControl, preferring home.
func (r *Run) drpcObject() *v1alpha1.DRPlacementControl {
	d := &v1alpha1.DRPlacementControl{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.key.Namespace, Name: r.key.Name},
		Spec: v1alpha1.DRPlacementControlSpec{
			DRPolicyRef: v1alpha1.PolicyReference{Name: r.c.Policy}, PreferredCluster: r.home,
			PVCSelector:       metav1.LabelSelector{MatchLabels: AppLabel},
			ConsistencyGroups: slices.Clone(r.c.ConsistencyGroups),
		},
	}
	if r.c.Hooks {
		d.Spec.RecipeRef = &v1alpha1.RecipeReference{Name: PostgresRecipeName}
	}
	if r.c.Mode == Placement {
		d.Spec.PlacementRef = &v1alpha1.PlacementReference{Kind: "Placement", Name: r.c.placement(), Namespace: r.c.PlacementNamespace}
	} else {
		d.Spec.ProtectedNamespaces = []string{r.c.Namespace}
	}
	return d
}

// ask sets the DRPlacementControl's action and cluster, as the CLI does.
func (r *Run) ask(ctx context.Context, action v1alpha1.DRAction, cluster string) error {
	for range 10 {
		d, err := r.drpc(ctx)
		if err != nil {
			return err
		}
		before := d.DeepCopy()
		d.Spec.Action = action
		if action == v1alpha1.ActionFailover {
			d.Spec.FailoverCluster = cluster
		} else {
			d.Spec.PreferredCluster = cluster
		}
		err = r.env.Hub.Patch(ctx, d, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		if !apierrors.IsConflict(err) {
			return err
		}
	}
	return errors.New("the DRPlacementControl kept changing; could not set the action")
}

// Failover loses from (its cluster is stopped), fails the application over to the other
// cluster and checks that every record up to the last group sync is there and that what is
// lost was written after it.
func (r *Run) Failover(ctx context.Context, from string) Step {
	to := r.other(from)
	step := Step{Action: "failover", From: from, To: to}
	ws, handles, lastSync, err := r.writingAndSynced(ctx, from)
	if err != nil {
		step.Err = err
		return r.record(step)
	}
	r.say("failover: stopping %s (its control plane, storage and agent); last group sync %s ago",
		from, time.Since(lastSync).Round(100*time.Millisecond))
	r.mu.Lock()
	r.down[from] = true
	r.mu.Unlock()
	if err := r.env.StopCluster(from); err != nil {
		step.Err = fmt.Errorf("failed to stop %s: %w", from, err)
		return r.record(step)
	}
	step.LossBound = time.Since(lastSync)
	wrote := map[string]records.Report{}
	for pvc, h := range handles {
		if wrote[pvc], err = r.report(from, h); err != nil {
			step.Err = err
			return r.record(step)
		}
	}
	began := time.Now()
	r.say("failover: asking drover to fail over to %s", to)
	if step.Err = r.failOverTo(ctx, to); step.Err != nil {
		// A PostgreSQL that cannot recover its copy never gets Ready: say why.
		if r.c.Workload.isPostgres() {
			if panicked := r.pgPanic(to, began); panicked != "" {
				step.Err = fmt.Errorf("%w; PostgreSQL does not start on %s: %s", step.Err, to, panicked)
			}
		}
		return r.record(step)
	}
	step.Duration = time.Since(began)
	step.Err = r.checkFailover(ctx, &step, ws, wrote, lastSync, "its loss")
	if step.Err == nil {
		_, _, step.Err = r.writing(ctx, to)
	}
	if step.Err == nil {
		step.Err = r.checkHooks(ctx, &step)
	}
	return r.record(step)
}

// failOverTo asks drover to fail the application over to cluster and waits until it runs
// there, FailedOver.
func (r *Run) failOverTo(ctx context.Context, to string) error {
	if err := r.ask(ctx, v1alpha1.ActionFailover, to); err != nil {
		return err
	}
	return r.await(ctx, "failover", func(d *v1alpha1.DRPlacementControl) bool { return settled(d, v1alpha1.PhaseFailedOver, to) })
}

// checkFailover reads the records on the failover's target and checks them against what each
// writer had written on the source at the cut (wrote; cut names the moment: the loss of the
// source, or its partition): every record up to the last group sync is there, none is missing
// in between, none written after the cut, and no more is lost than was written after the
// sync. It adds the records kept and lost to step, and the writers whose volumes the target
// holds out of twin order (judgeTwins).
func (r *Run) checkFailover(ctx context.Context, step *Step, ws []writer, wrote map[string]records.Report, lastSync time.Time, cut string) error {
	if r.c.Workload.isPostgres() {
		return r.pgCheckFailover(ctx, step, lastSync)
	}
	from, to := step.From, step.To
	err := r.onTarget(ctx, to, ws, func(pvc string, w writer, kept records.WriterReport) error {
		before, _ := wrote[pvc].Writer(w.id)
		step.Kept += kept.LastSeq
		step.Lost += before.LastSeq - min(before.LastSeq, kept.LastSeq)
		switch {
		case kept.LastSeq == 0 && before.LastWrite.Before(lastSync):
			return fmt.Errorf("%s: %s holds no record of %s, which wrote before the last group sync", pvc, to, w.id)
		case len(kept.Gaps) > 0:
			return fmt.Errorf("%s: records of %s missing on %s: %s", pvc, w.id, to, records.FormatRanges(kept.Gaps))
		case kept.LastSeq > before.LastSeq:
			return fmt.Errorf("%s: %s holds record %d of %s, which %s had not written at %s (it wrote up to %d)", pvc, to, kept.LastSeq, w.id, from, cut, before.LastSeq)
		case float64(before.LastSeq-kept.LastSeq)*r.interval().Seconds() > (step.LossBound + time.Second + r.interval()).Seconds():
			// The writer writes one record per interval: losing more than the time since the
			// last group sync holds (plus the second that metav1.Time truncates and one
			// record) means records written before the sync were lost.
			return fmt.Errorf("%s: %d records of %s lost, more than %s of writes since the last group sync: records up to the sync were lost",
				pvc, before.LastSeq-kept.LastSeq, w.id, step.LossBound.Round(time.Millisecond))
		}
		return nil
	})
	// The twin order across a writer's volumes is reported, not judged: without consistency
	// groups each volume fails over from its own instant (TornTwin).
	return errors.Join(err, r.judgeTwins(ctx, step, ws))
}

// onTarget waits until every PVC the writers ws used is Bound on cluster, reads each writer's
// records in each of its PVCs there and calls check with them; it joins what check and the
// reads return.
func (r *Run) onTarget(ctx context.Context, cluster string, ws []writer, check func(pvc string, w writer, kept records.WriterReport) error) error {
	handles, err := r.boundVolumes(ctx, cluster, ws)
	if err != nil {
		return err
	}
	var errs []error
	for _, w := range ws {
		for _, pvc := range w.pvcs {
			h, ok := handles[pvc]
			if !ok {
				errs = append(errs, fmt.Errorf("PVC %s is not Bound on %s", pvc, cluster))
				continue
			}
			rep, err := r.report(cluster, h)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			kept, _ := rep.Writer(w.id)
			errs = append(errs, check(pvc, w, kept))
		}
	}
	return errors.Join(errs...)
}

// interval is the interval of the case's writers.
func (r *Run) interval() time.Duration {
	d, _ := time.ParseDuration(writerInterval(r.c.Workload))
	return d
}

// Recover starts a lost cluster again and waits, with no other action, until drover has
// cleaned it (the application no longer runs there) and demoted it (PeerReady); the PVCs of a
// workload that keeps them are still there.
func (r *Run) Recover(ctx context.Context, cluster string) Step {
	step := Step{Action: "recover", From: cluster, To: cluster}
	began := time.Now()
	r.say("recover: starting %s again", cluster)
	if err := r.env.StartCluster(ctx, cluster); err != nil {
		step.Err = fmt.Errorf("failed to start %s: %w", cluster, err)
		return r.record(step)
	}
	return r.recovered(ctx, step, began, time.Now())
}

// Returned is Recover for a lost cluster that the caller started again at began, such as one
// lost in the stories of several applications at once (LoseTogether): it waits, with no other
// action, until drover has cleaned and demoted it there. The watcher counts the cluster back
// from began.
func (r *Run) Returned(ctx context.Context, cluster string, began time.Time) Step {
	return r.recovered(ctx, Step{Action: "recover", From: cluster, To: cluster}, began, began)
}

// recovered records that step's cluster is back since back and waits until drover has cleaned
// it (the application no longer runs there) and demoted it (PeerReady); the PVCs of a workload
// that keeps them are still there. The step's duration counts from began.
func (r *Run) recovered(ctx context.Context, step Step, began, back time.Time) Step {
	cluster := step.From
	r.mu.Lock()
	delete(r.down, cluster)
	r.back[cluster] = back
	r.mu.Unlock()
	// Recovered means the peer is ready and the primary's data replicates to it again
	// (Protected), so the next failover has a recovery point.
	step.Err = r.await(ctx, "recover", func(d *v1alpha1.DRPlacementControl) bool {
		return d.Status.CurrentPrimary != cluster && isTrue(d, v1alpha1.ConditionPeerReady) && isTrue(d, v1alpha1.ConditionAvailable) &&
			isTrue(d, v1alpha1.ConditionProtected)
	})
	step.Duration = time.Since(began)
	if step.Err == nil {
		ws, err := r.writers(ctx, cluster)
		switch {
		case err != nil:
			step.Err = err
		case len(ws) > 0:
			step.Err = fmt.Errorf("the application still runs on %s (pod %s) after its group is Secondary", cluster, ws[0].pod)
		}
	}
	if kept := r.keptPVCs(); step.Err == nil && kept > 0 {
		list := &corev1.PersistentVolumeClaimList{}
		if err := r.env.Clusters[cluster].List(ctx, list, client.InNamespace(r.c.Namespace), client.MatchingLabels(AppLabel)); err != nil {
			step.Err = err
		} else if len(list.Items) != kept {
			step.Err = fmt.Errorf("%d of the StatefulSet's %d PVCs are left on %s: nobody may delete them", len(list.Items), kept, cluster)
		}
	}
	return r.record(step)
}

// Relocate moves the application to the other cluster with both up and checks that every
// record its writers acknowledged is on the target.
func (r *Run) Relocate(ctx context.Context, from string) Step {
	to := r.other(from)
	step := Step{Action: "relocate", From: from, To: to}
	ws, _, err := r.writing(ctx, from)
	if err != nil {
		step.Err = err
		return r.record(step)
	}
	if r.c.Hooks {
		r.pg.fastShutdowns = r.pgFastShutdowns(from)
	}
	began := time.Now()
	r.say("relocate: asking drover to relocate to %s", to)
	if err := r.ask(ctx, v1alpha1.ActionRelocate, to); err != nil {
		step.Err = err
		return r.record(step)
	}
	if err := r.await(ctx, "relocate", func(d *v1alpha1.DRPlacementControl) bool { return settled(d, v1alpha1.PhaseRelocated, to) }); err != nil {
		step.Err = err
		return r.record(step)
	}
	step.Duration = time.Since(began)
	if r.c.Workload.isPostgres() {
		step.Err = r.pgJudge(ctx, &step, time.Time{})
	} else {
		step.Kept, step.Lost, step.Err = r.relocated(ctx, from, to, ws)
	}
	if step.Err == nil {
		_, _, step.Err = r.writing(ctx, to)
	}
	if step.Err == nil {
		step.Err = r.checkHooks(ctx, &step)
	}
	if step.Err == nil {
		step.Err = r.await(ctx, "relocate: peer ready", func(d *v1alpha1.DRPlacementControl) bool { return isTrue(d, v1alpha1.ConditionPeerReady) })
	}
	return r.record(step)
}

// relocated checks, once the application was relocated from to, that every record its writers
// ws acknowledged on from is on to, and returns the records kept and lost.
func (r *Run) relocated(ctx context.Context, from, to string, ws []writer) (kept, lost uint64, err error) {
	toHandles, err := r.boundVolumes(ctx, to, ws)
	if err != nil {
		return 0, 0, err
	}
	var errs []error
	for _, w := range ws {
		st, err := storage.ReadWriterStatus(filepath.Clean(r.env.DataDir(from)), r.c.Namespace, w.pod)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if st.Running {
			errs = append(errs, fmt.Errorf("the writer of %s on %s still runs after the relocation", w.pod, from))
		}
		// prev is the writer's records in the volume before, on to: the writer had stopped
		// before the final sync, so its volumes there are copies of one instant, which keep the
		// twin order (records.CheckTwins).
		var prev *records.WriterReport
		for _, v := range st.Volumes {
			h, ok := toHandles[v.PVC]
			if !ok {
				errs = append(errs, fmt.Errorf("PVC %s is not Bound on %s", v.PVC, to))
				prev = nil
				continue
			}
			rep, err := r.report(to, h)
			if err != nil {
				errs = append(errs, err)
				prev = nil
				continue
			}
			got, _ := rep.Writer(st.WriterID)
			if prev != nil {
				if err := records.CheckTwins(*prev, got); err != nil {
					errs = append(errs, fmt.Errorf("%s on %s after the relocation: %w", v.PVC, to, err))
				}
			}
			prev = &got
			kept += got.LastSeq
			lost += v.LastSeq - min(v.LastSeq, got.LastSeq)
			if got.LastSeq < v.LastSeq || len(got.Gaps) > 0 {
				errs = append(errs, fmt.Errorf("%s: %s acknowledged %d records on %s, %s holds %d (gaps %s)",
					v.PVC, st.WriterID, v.LastSeq, from, to, got.LastSeq, records.FormatRanges(got.Gaps)))
			}
		}
	}
	return kept, lost, errors.Join(errs...)
}

// Unprotect deletes the DRPlacementControl and waits until it is gone and both groups with it;
// the application keeps running where it runs.
func (r *Run) Unprotect(ctx context.Context) Step {
	d, err := r.drpc(ctx)
	step := Step{Action: "unprotect"}
	if err != nil {
		step.Err = err
		return r.record(step)
	}
	primary := d.Status.CurrentPrimary
	step.From, step.To = primary, primary
	began := time.Now()
	r.say("unprotect: deleting the DRPlacementControl")
	if err := r.env.Hub.Delete(ctx, d); err != nil {
		step.Err = err
		return r.record(step)
	}
	if err := r.poll(ctx, pollInterval, func(ctx context.Context) error {
		gone := apierrors.IsNotFound(r.env.Hub.Get(ctx, r.key, &v1alpha1.DRPlacementControl{}))
		for _, cl := range r.env.Clusters {
			if !apierrors.IsNotFound(cl.Get(ctx, r.key, &v1alpha1.VolumeReplicationGroup{})) {
				gone = false
			}
		}
		if !gone {
			return errors.New("the DRPlacementControl or a VolumeReplicationGroup is still there")
		}
		return nil
	}); err != nil {
		step.Err = err
		return r.record(step)
	}
	step.Duration = time.Since(began)
	_, _, step.Err = r.writing(ctx, primary)
	return r.record(step)
}

// writingAndSynced checks that the writers on cluster write and waits for a group sync that
// began after that, the recovery point of a failover from cluster: the primary group's last
// group sync, read where the agent writes it. The loss comes after a sync that began once the
// writers had written, so the failover has records to keep.
func (r *Run) writingAndSynced(ctx context.Context, cluster string) ([]writer, map[string]string, time.Time, error) {
	ws, handles, err := r.writing(ctx, cluster)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	lastSync, err := r.syncAfter(ctx, cluster, time.Now())
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	return ws, handles, lastSync, nil
}

// syncAfter waits until the primary group on cluster reports a group sync that began at or after
// t (to the second: metav1.Time), and returns it.
func (r *Run) syncAfter(ctx context.Context, cluster string, t time.Time) (time.Time, error) {
	var last time.Time
	err := r.poll(ctx, pollInterval, func(ctx context.Context) error {
		group := &v1alpha1.VolumeReplicationGroup{}
		if err := r.env.Clusters[cluster].Get(ctx, r.key, group); err != nil {
			return fmt.Errorf("no group sync on %s after %s: %w", cluster, t.Format(time.TimeOnly), err)
		}
		if group.Status.LastGroupSyncTime == nil || group.Status.LastGroupSyncTime.Time.Before(t.Truncate(time.Second)) {
			return fmt.Errorf("no group sync on %s after %s", cluster, t.Format(time.TimeOnly))
		}
		last = group.Status.LastGroupSyncTime.Time
		return nil
	})
	return last, err
}
