package story

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/agent/vrg"
)

// removed is what RemoveWorkloads took away from one application and RestoreWorkloads creates
// again: its StatefulSet, its PVCs and their PVs, as a restore would create them.
type removed struct {
	sts  *appsv1.StatefulSet
	pvcs []*corev1.PersistentVolumeClaim
	pvs  []*corev1.PersistentVolume
}

// Removed is what RemoveWorkloads removed from a cluster, for RestoreWorkloads.
type Removed struct {
	cluster string
	apps    map[*Run]removed
}

// RemoveWorkloads removes every application's StatefulSet, PVCs and PVs from cluster (the PVs
// retained first, so the volumes keep their data) and waits until all are gone. With
// RestoreWorkloads it measures the restore floor: the cluster alone starting the workloads from
// objects created anew, the least any restore does (no storage promotion, no S3, no hub).
func (f *Fleet) RemoveWorkloads(ctx context.Context, cluster string) (*Removed, error) {
	cl := f.env.Clusters[cluster]
	rm := &Removed{cluster: cluster, apps: map[*Run]removed{}}
	var mu sync.Mutex
	err := f.each(ctx, func(ctx context.Context, r *Run) error {
		app, err := removeWorkload(ctx, cl, r.c.Namespace)
		mu.Lock()
		rm.apps[r] = app
		mu.Unlock()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("failed to remove the workloads: %w", err)
	}
	if err := f.poll(ctx, func(ctx context.Context) error { return workloadsGone(ctx, cl, rm.apps) }); err != nil {
		return nil, fmt.Errorf("the workloads' PVs did not go: %w", err)
	}
	return rm, nil
}

// RestoreWorkloads creates what RemoveWorkloads removed again, as drover's restore creates it
// (vrg.CleanPV names the claim, vrg.CleanPVC the volume), the PVs and PVCs first, then the
// StatefulSet, and returns the time from the first create until every pod is Running and Ready.
func (f *Fleet) RestoreWorkloads(ctx context.Context, rm *Removed) (time.Duration, error) {
	cl := f.env.Clusters[rm.cluster]
	began := time.Now()
	err := f.each(ctx, func(ctx context.Context, r *Run) error { return rm.apps[r].create(ctx, cl) })
	if err != nil {
		return 0, fmt.Errorf("failed to create the workloads again: %w", err)
	}
	want := 0
	for _, r := range f.Runs {
		want += int(r.c.Replicas)
	}
	if err := f.poll(ctx, func(ctx context.Context) error { return f.podsReady(ctx, rm.cluster, want) }); err != nil {
		return 0, fmt.Errorf("the workloads did not start from their restored objects: %w", err)
	}
	return time.Since(began), nil
}

// removeWorkload keeps a restorable copy of a namespace's StatefulSet "db", PVCs and their PVs
// (as they were: the PVs keep their reclaim policy when created again), retains the PVs and
// deletes the StatefulSet and the PVCs; workloadsGone deletes the PVs once their claims are gone.
func removeWorkload(ctx context.Context, cl client.Client, ns string) (removed, error) {
	var rm removed
	sts := &appsv1.StatefulSet{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, sts); err != nil {
		return rm, err
	}
	rm.sts = &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: sts.Name, Namespace: ns, Labels: sts.Labels}, Spec: sts.Spec}
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := cl.List(ctx, pvcs, client.InNamespace(ns)); err != nil {
		return rm, err
	}
	for i := range pvcs.Items {
		pvc := &pvcs.Items[i]
		pv := &corev1.PersistentVolume{}
		if err := cl.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
			return rm, fmt.Errorf("PVC %s: %w", pvc.Name, err)
		}
		rm.pvcs, rm.pvs = append(rm.pvcs, vrg.CleanPVC(pvc)), append(rm.pvs, vrg.CleanPV(pv))
		// Retained before its claim goes: the lab storage deletes a released volume's data otherwise.
		retain := fmt.Appendf(nil, `{"spec":{"persistentVolumeReclaimPolicy":%q}}`, corev1.PersistentVolumeReclaimRetain)
		if err := cl.Patch(ctx, pv, client.RawPatch(types.MergePatchType, retain)); err != nil {
			return rm, fmt.Errorf("failed to retain PV %s: %w", pv.Name, err)
		}
	}
	if err := cl.Delete(ctx, sts, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		return rm, err
	}
	for _, pvc := range pvcs.Items {
		if err := client.IgnoreNotFound(cl.Delete(ctx, &pvc)); err != nil {
			return rm, err
		}
	}
	return rm, nil
}

// workloadsGone checks, with one list of each kind, that every removed StatefulSet, PVC and PV
// is gone, and deletes the PVs whose claims are (deleted earlier, a PV would wait for its claim
// anyway).
func workloadsGone(ctx context.Context, cl client.Client, saved map[*Run]removed) error {
	stss, pvcs, pvs := &appsv1.StatefulSetList{}, &corev1.PersistentVolumeClaimList{}, &corev1.PersistentVolumeList{}
	for _, l := range []client.ObjectList{stss, pvcs, pvs} {
		if err := cl.List(ctx, l); err != nil {
			return err
		}
	}
	present := map[string]bool{}
	for _, s := range stss.Items {
		present["sts/"+s.Namespace+"/"+s.Name] = true
	}
	for _, c := range pvcs.Items {
		present["pvc/"+c.Namespace+"/"+c.Name] = true
	}
	left := 0
	for _, rm := range saved {
		claimsLeft := present["sts/"+rm.sts.Namespace+"/"+rm.sts.Name]
		for _, c := range rm.pvcs {
			claimsLeft = claimsLeft || present["pvc/"+c.Namespace+"/"+c.Name]
		}
		if claimsLeft {
			left++
		}
		for i := range pvs.Items {
			pv := &pvs.Items[i]
			if !slices.ContainsFunc(rm.pvs, func(p *corev1.PersistentVolume) bool { return p.Name == pv.Name }) {
				continue
			}
			left++
			if !claimsLeft && pv.DeletionTimestamp.IsZero() {
				if err := client.IgnoreNotFound(cl.Delete(ctx, pv)); err != nil {
					return err
				}
			}
		}
	}
	if left > 0 {
		return fmt.Errorf("%d applications' objects or PVs left", left)
	}
	return nil
}

// create makes the application's PVs, PVCs and StatefulSet again, in a restore's order.
func (rm removed) create(ctx context.Context, cl client.Client) error {
	var objs []client.Object
	for _, pv := range rm.pvs {
		objs = append(objs, pv.DeepCopy())
	}
	for _, pvc := range rm.pvcs {
		objs = append(objs, pvc.DeepCopy())
	}
	objs = append(objs, rm.sts.DeepCopy())
	var errs []error
	for _, o := range objs {
		if err := cl.Create(ctx, o); err != nil {
			errs = append(errs, fmt.Errorf("failed to create %s: %w", o.GetName(), err))
		}
	}
	return errors.Join(errs...)
}
