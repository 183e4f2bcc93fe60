package drill

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/pod-security-admission/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg"
	"github.com/drover-io/drover/internal/objectstore"
	"github.com/drover-io/drover/internal/podsecurity"
	"github.com/drover-io/drover/internal/replication/volsync"
)

// Why a VolumeReplication application is drilled in readiness mode: its PVCs' images on this
// cluster are mirrored secondaries, and ceph-csi cannot copy one. Its CreateSnapshot
// (internal/rbd/controllerserver.go, through doSnapshotClone) and a PVC clone both start with
// `rbd snap create` on the image (internal/rbd/rbd_util.go, createSnapshot), with no check of the
// image's mirroring role, which librbd refuses on a non-primary image; and a PV of a secondary is
// not even staged (rbd_util.go, isInUse: "cannot map image ... it is not primary"). Promoting it,
// or stopping its mirroring, would touch the primary's replication, which a drill never does. The
// lab's storage refuses a snapshot of a secondary image the same way (internal/lab/storage,
// snapshot_static.go).

// maxReadiness bounds the checks listed (the API's limit).
const maxReadiness = 64

// decideMode reads the group's stored PVCs once, while the mode is undecided: when one of them is
// not received by VolSync here (a VolumeReplication PVC) no copy can be made, and the sandbox
// checks readiness instead of starting the application (checkReadiness).
func (r *Reconciler) decideMode(ctx context.Context, sc *scope) (ctrl.Result, error) {
	if sc.sandbox.Status.Mode != "" {
		return ctrl.Result{}, nil
	}
	pvs, pvcs, from, err := r.readMetadata(ctx, sc.group)
	if err != nil {
		sc.waiting(StepCopyingVolumes, "reading the stored PVs and PVCs: "+err.Error())
		return ctrl.Result{RequeueAfter: requeueWaiting}, nil //nolint:nilerr // the error is the step's waiting message; the metadata is read again after requeueWaiting
	}
	var mirrored []*corev1.PersistentVolumeClaim
	for _, pvc := range pvcs {
		if _, ok := sc.namespaces[pvc.Namespace]; !ok || volsync.Receives(sc.group, pvc.Namespace, pvc.Name) {
			continue
		}
		vs, err := r.volSyncClass(ctx, sc.group, pvc)
		if err != nil {
			return ctrl.Result{}, err
		}
		if vs {
			sc.waiting(StepCopyingVolumes, fmt.Sprintf("PVC %s/%s is replicated by VolSync but not received here yet", pvc.Namespace, pvc.Name))
			return ctrl.Result{RequeueAfter: requeueWaiting}, nil
		}
		mirrored = append(mirrored, pvc)
	}
	if len(mirrored) == 0 {
		sc.sandbox.Status.Mode = v1alpha1.DrillModeFull
		return ctrl.Result{}, nil
	}
	sc.sandbox.Status.Mode = v1alpha1.DrillModeReadiness
	return r.checkReadiness(ctx, sc, readinessInput{pvs: pvs, pvcs: pvcs, mirrored: mirrored, from: from})
}

// volSyncClass reports whether the group replicates a PVC's StorageClass with VolSync (an entry
// naming the class wins over one naming its provisioner, as the backends' registry chooses).
func (r *Reconciler) volSyncClass(ctx context.Context, group *v1alpha1.VolumeReplicationGroup, pvc *corev1.PersistentVolumeClaim) (bool, error) {
	name := ""
	if pvc.Spec.StorageClassName != nil {
		name = *pvc.Spec.StorageClassName
	}
	for _, b := range group.Spec.StorageClassBackends {
		if b.StorageClassName != "" && b.StorageClassName == name {
			return b.Backend == v1alpha1.BackendVolSync, nil
		}
	}
	class := &storagev1.StorageClass{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: name}, class); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	for _, b := range group.Spec.StorageClassBackends {
		if b.StorageClassName == "" && b.Provisioner == class.Provisioner {
			return b.Backend == v1alpha1.BackendVolSync, nil
		}
	}
	return false, nil
}

// readinessInput is what the readiness checks read from the store.
type readinessInput struct {
	pvs      map[string]*corev1.PersistentVolume
	pvcs     []*corev1.PersistentVolumeClaim
	mirrored []*corev1.PersistentVolumeClaim
	from     string
}

// readMetadata reads the stored PVs and PVCs from the first S3 profile that answers.
func (r *Reconciler) readMetadata(ctx context.Context, group *v1alpha1.VolumeReplicationGroup) (map[string]*corev1.PersistentVolume, []*corev1.PersistentVolumeClaim, string, error) {
	var errs []string
	for _, p := range group.Spec.S3Profiles {
		store, err := vrg.OpenStore(ctx, r.APIReader, p, r.NewStore, r.StoreLimits)
		var prefix string
		if err == nil {
			prefix, err = vrg.DataPrefix(ctx, store, group)
		}
		if err == nil {
			pvs, pvcs, err := vrg.ReadMetadata(ctx, store, prefix)
			if err == nil {
				return pvs, pvcs, p.Name, nil
			}
			errs = append(errs, err.Error())
			continue
		}
		errs = append(errs, err.Error())
	}
	return nil, nil, "", fmt.Errorf("no S3 profile could be read: %s", strings.Join(errs, "; "))
}

// checkReadiness checks every part of a recovery that needs no copy of the data, lists what it
// could not check, and judges the sandbox: Failed when a check failed.
func (r *Reconciler) checkReadiness(ctx context.Context, sc *scope, in readinessInput) (ctrl.Result, error) {
	sc.step(StepReadiness)
	checks := []v1alpha1.DrillCheck{{Name: "PV and PVC metadata decoded", Result: v1alpha1.DrillResultPassed,
		Message: fmt.Sprintf("%d PVs and %d PVCs read from S3 profile %s", len(in.pvs), len(in.pvcs), in.from)}}
	classes, err := r.classChecks(ctx, in.pvcs)
	if err != nil {
		return ctrl.Result{}, err
	}
	checks = append(checks, classes...)
	checks = append(checks, replicationCheck(sc.group))
	checks = append(checks, r.dryRunObjects(ctx, sc))
	for _, pvc := range in.mirrored {
		checks = append(checks, v1alpha1.DrillCheck{Name: clipName("copy of PVC " + pvc.Namespace + "/" + pvc.Name), Result: v1alpha1.DrillResultSkipped,
			Message: "not checked: its image here is a mirrored secondary, which the storage cannot snapshot or clone without promoting it (ceph-csi snapshots and clones with rbd snap create on the image, refused on a non-primary); its data is proven only by a failover"})
	}
	checks = append(checks, v1alpha1.DrillCheck{Name: "workloads started", Result: v1alpha1.DrillResultSkipped,
		Message: "not checked: readiness mode starts nothing, so no RTO is measured"})
	if len(checks) > maxReadiness {
		checks = checks[:maxReadiness]
	}
	sc.sandbox.Status.Readiness = checks
	sc.sandbox.Status.Check = &v1alpha1.DrillCheckJob{Result: v1alpha1.DrillResultSkipped, Message: "readiness mode starts no workloads to check"}
	if i := slices.IndexFunc(checks, func(c v1alpha1.DrillCheck) bool { return c.Result == v1alpha1.DrillResultFailed }); i >= 0 {
		sc.fail(StepReadiness, fmt.Sprintf("readiness check %q failed: %s", checks[i].Name, checks[i].Message))
		return ctrl.Result{}, nil
	}
	sc.finish(StepReadiness, v1alpha1.DrillResultPassed, fmt.Sprintf("%d checks, the copies of %d volumes could not be made (status.readiness)", len(checks), len(in.mirrored)))
	sc.sandbox.Status.Result = v1alpha1.DrillResultPassed
	sc.sandbox.Status.Message = "readiness mode: every check that needs no copy of the data passed; status.readiness lists what could not be checked"
	return ctrl.Result{}, nil
}

// classChecks checks that the StorageClass of every stored PVC exists here.
func (r *Reconciler) classChecks(ctx context.Context, pvcs []*corev1.PersistentVolumeClaim) ([]v1alpha1.DrillCheck, error) {
	var names []string
	for _, pvc := range pvcs {
		if pvc.Spec.StorageClassName != nil && !slices.Contains(names, *pvc.Spec.StorageClassName) {
			names = append(names, *pvc.Spec.StorageClassName)
		}
	}
	slices.Sort(names)
	var out []v1alpha1.DrillCheck
	for _, name := range names {
		c := v1alpha1.DrillCheck{Name: clipName("StorageClass " + name), Result: v1alpha1.DrillResultPassed, Message: "present on this cluster"}
		err := r.APIReader.Get(ctx, client.ObjectKey{Name: name}, &storagev1.StorageClass{})
		switch {
		case apierrors.IsNotFound(err):
			c.Result, c.Message = v1alpha1.DrillResultFailed, "missing on this cluster: a failover could not restore its PVCs; create it"
		case err != nil:
			return nil, fmt.Errorf("failed to get StorageClass %s: %w", name, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// replicationCheck is the group's own word on its replication: DataReady.
func replicationCheck(group *v1alpha1.VolumeReplicationGroup) v1alpha1.DrillCheck {
	c := v1alpha1.DrillCheck{Name: "replication healthy", Result: v1alpha1.DrillResultFailed, Message: "the group reports no DataReady condition yet"}
	if cond := apimeta.FindStatusCondition(group.Status.Conditions, v1alpha1.ConditionDataReady); cond != nil {
		c.Message = clip(fmt.Sprintf("DataReady %s (%s): %s", cond.Status, cond.Reason, cond.Message))
		if cond.Status == "True" {
			c.Result = v1alpha1.DrillResultPassed
		}
	}
	return c
}

// noCaptureMessage says why a group in placement mode has no objects for a drill.
const noCaptureMessage = "the group captures no objects: its DRPlacementControl is in placement mode, where the placement's GitOps tool restores them; " +
	"set the DRPlacementControl's spec.kubeObjectProtection for drover to capture them too, and a drill to check and start them"

// dryRunObjects applies every mapped captured object into the sandbox with a server-side dry run:
// the API server and its admission say whether a recovery could create it here. A refusal is the
// check's result, never an error of the drill.
func (r *Reconciler) dryRunObjects(ctx context.Context, sc *scope) v1alpha1.DrillCheck {
	c := v1alpha1.DrillCheck{Name: "objects accepted by the API server (dry run)"}
	if sc.group.Spec.KubeObjectProtection == nil {
		c.Result, c.Message = v1alpha1.DrillResultSkipped, "not checked: "+noCaptureMessage
		return c
	}
	capture, from, unavailable, refused := vrg.ReadCapture(ctx, sc.group, r.Client.RESTMapper(), func(p v1alpha1.S3Profile) (objectstore.Store, error) {
		return vrg.OpenStore(ctx, r.APIReader, p, r.NewStore, r.StoreLimits)
	})
	if capture == nil {
		c.Result, c.Message = v1alpha1.DrillResultFailed, clip(fmt.Sprintf("no capture of the objects could be read (read %q; unavailable: %s; refused: %s)",
			from, strings.Join(unavailable, "; "), strings.Join(refused, "; ")))
		return c
	}
	if err := r.raiseLevels(ctx, sc, capture); err != nil {
		c.Result, c.Message = v1alpha1.DrillResultFailed, clip(err.Error())
		return c
	}
	var failed []string
	n := 0
	levels := map[string]api.LevelVersion{}
	for _, o := range capture.Objects {
		m, ok := MapObject(o, sc.namespaces)
		if !ok {
			continue
		}
		n++
		if why, err := r.podSecurityProblem(ctx, sc, levels, m); err != nil || why != "" {
			failed = append(failed, objectName(m)+": "+cmp.Or(why, fmt.Sprint(err)))
			continue
		}
		err := r.Client.Create(ctx, m.DeepCopy(), client.DryRunAll, client.FieldOwner(fieldOwner))
		if err != nil && !apierrors.IsAlreadyExists(err) {
			failed = append(failed, objectName(m)+": "+err.Error())
		}
	}
	if len(failed) > 0 {
		c.Result, c.Message = v1alpha1.DrillResultFailed, clip(fmt.Sprintf("%d of %d objects refused: %s", len(failed), n, strings.Join(failed, "; ")))
		return c
	}
	c.Result, c.Message = v1alpha1.DrillResultPassed, fmt.Sprintf("%d objects of the capture of %s from S3 profile %s", n, capture.CapturedAt.UTC().Format("2006-01-02T15:04:05Z"), from)
	return c
}

// podSecurityProblem says why the pods of a mapped object would be refused by the level of its
// sandbox namespace (read once per namespace into levels), as a restore would refuse it.
func (r *Reconciler) podSecurityProblem(ctx context.Context, sc *scope, levels map[string]api.LevelVersion, m *unstructured.Unstructured) (string, error) {
	lv, ok := levels[m.GetNamespace()]
	if !ok {
		level, err := r.namespaceLevel(ctx, sc, m.GetNamespace())
		if err != nil {
			return "", err
		}
		lv = api.LevelVersion{Level: level, Version: api.LatestVersion()}
		levels[m.GetNamespace()] = lv
	}
	return podsecurity.TemplateViolations(m, lv), nil
}

func objectName(o *unstructured.Unstructured) string {
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

// clipName bounds a check's name (the API's limit, 128).
func clipName(s string) string {
	if len(s) <= 128 {
		return s
	}
	return s[:125] + "..."
}
