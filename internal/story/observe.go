package story

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/lab/records"
	"github.com/drover-io/drover/internal/lab/storage"
)

// writer is one Running pod of the application and the PVCs it writes.
type writer struct {
	pod string
	id  string
	// pvcs are the claims of the pod's volumes.
	pvcs []string
}

// volumes returns the handle of each of the application's Bound PVCs on a cluster, by PVC name.
func (r *Run) volumes(ctx context.Context, cluster string) (map[string]string, error) {
	cl := r.env.Clusters[cluster]
	list := &corev1.PersistentVolumeClaimList{}
	if err := cl.List(ctx, list, client.InNamespace(r.c.Namespace), client.MatchingLabels(AppLabel)); err != nil {
		return nil, fmt.Errorf("failed to list the application's PVCs on %s: %w", cluster, err)
	}
	out := map[string]string{}
	for _, pvc := range list.Items {
		if pvc.Status.Phase != corev1.ClaimBound || !pvc.DeletionTimestamp.IsZero() {
			continue
		}
		pv := &corev1.PersistentVolume{}
		if err := cl.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
			return nil, fmt.Errorf("failed to get PV %s on %s: %w", pvc.Spec.VolumeName, cluster, err)
		}
		if pv.Spec.CSI != nil {
			out[pvc.Name] = pv.Spec.CSI.VolumeHandle
		}
	}
	return out, nil
}

// writers returns the application's Running writer pods on a cluster.
func (r *Run) writers(ctx context.Context, cluster string) ([]writer, error) {
	pods := &corev1.PodList{}
	if err := r.env.Clusters[cluster].List(ctx, pods, client.InNamespace(r.c.Namespace), client.MatchingLabels(AppLabel)); err != nil {
		return nil, fmt.Errorf("failed to list the application's pods on %s: %w", cluster, err)
	}
	var out []writer
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || !p.DeletionTimestamp.IsZero() {
			continue
		}
		w := writer{pod: p.Name, id: storage.WriterID(&p)}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				w.pvcs = append(w.pvcs, v.PersistentVolumeClaim.ClaimName)
			}
		}
		out = append(out, w)
	}
	return out, nil
}

// expectedPods is how many writer pods the application runs.
func (r *Run) expectedPods() int {
	if r.c.Workload == DeploymentWithPVC || r.c.Workload.isPostgres() {
		return 1
	}
	return int(r.c.Replicas)
}

// keptPVCs is how many PVCs a StatefulSet that keeps its PVCs leaves on a cluster it left: one
// per replica and claim template; 0 for a workload that deletes them.
func (r *Run) keptPVCs() int {
	switch r.c.Workload {
	case StatefulSetKeepsPVCs:
		return int(r.c.Replicas)
	case StatefulSetTwoVolumes:
		return int(r.c.Replicas) * len(twinMounts)
	}
	return 0
}

// writing waits until the application runs its writers on a cluster and each has written into
// its volume, and returns them.
func (r *Run) writing(ctx context.Context, cluster string) ([]writer, map[string]string, error) {
	var ws []writer
	var handles map[string]string
	err := r.poll(ctx, pollInterval, func(ctx context.Context) (err error) {
		ws, handles, err = r.writingNow(ctx, cluster)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("the application does not write on %s: %w", cluster, err)
	}
	return ws, handles, nil
}

func (r *Run) writingNow(ctx context.Context, cluster string) ([]writer, map[string]string, error) {
	if r.c.Workload.isPostgres() {
		return r.pgWritingNow(ctx, cluster)
	}
	ws, err := r.writers(ctx, cluster)
	if err != nil {
		return nil, nil, err
	}
	if len(ws) != r.expectedPods() {
		return nil, nil, fmt.Errorf("%d of %d pods Running", len(ws), r.expectedPods())
	}
	handles, err := r.volumes(ctx, cluster)
	if err != nil {
		return nil, nil, err
	}
	for _, w := range ws {
		for _, pvc := range w.pvcs {
			h, ok := handles[pvc]
			if !ok {
				return nil, nil, fmt.Errorf("PVC %s of pod %s is not Bound", pvc, w.pod)
			}
			rep, err := r.report(cluster, h)
			if err != nil {
				return nil, nil, err
			}
			if wr, ok := rep.Writer(w.id); !ok || wr.LastSeq < 5 {
				return nil, nil, fmt.Errorf("pod %s has not written 5 records into %s yet", w.pod, pvc)
			}
		}
	}
	return ws, handles, nil
}

// report verifies the records of an image on a cluster's lab storage.
func (r *Run) report(cluster, handle string) (records.Report, error) {
	return records.Verify(storage.VolumePath(r.env.DataDir(cluster), handle))
}

// imageRole reads the role the lab storage records for an image; empty when it has none.
func (r *Run) imageRole(cluster, handle string) storage.ImageRole {
	raw, err := os.ReadFile(filepath.Join(r.env.DataDir(cluster), "images", handle+".json")) //nolint:gosec // the lab's own directory
	if err != nil {
		return ""
	}
	var st storage.ImageState
	if json.Unmarshal(raw, &st) != nil {
		return ""
	}
	return st.Role
}

// boundVolumes waits until every PVC the writers used is Bound on a cluster and returns the
// handles; at the timeout it says which PVC is not and in which phase.
func (r *Run) boundVolumes(ctx context.Context, cluster string, ws []writer) (map[string]string, error) {
	var handles map[string]string
	missing := ""
	err := r.poll(ctx, pollInterval, func(ctx context.Context) (err error) {
		if handles, err = r.volumes(ctx, cluster); err != nil {
			return err
		}
		missing = ""
		for _, w := range ws {
			for _, pvc := range w.pvcs {
				if _, ok := handles[pvc]; !ok && missing == "" {
					missing = pvc
				}
			}
		}
		if missing != "" {
			return errNotBound
		}
		return nil
	})
	switch {
	case errors.Is(err, errNotBound):
		pvc := &corev1.PersistentVolumeClaim{}
		gerr := r.env.Clusters[cluster].Get(context.Background(), client.ObjectKey{Namespace: r.c.Namespace, Name: missing}, pvc)
		return nil, fmt.Errorf("PVC %s is not Bound on %s (get: %w, phase %q, labels %v, deleting %t)", missing, cluster, gerr, pvc.Status.Phase, pvc.Labels, !pvc.DeletionTimestamp.IsZero())
	case err != nil:
		return nil, err
	}
	return handles, nil
}

// errNotBound says a PVC the writers used is not Bound yet; boundVolumes describes it at the end.
var errNotBound = errors.New("a PVC is not Bound")
