package volsync

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
)

// A destination's mover is a Job and its pod, as VolSync makes them
// (backube/volsync internal/controller/mover/rsynctls/mover.go, ensureJob; the ServiceAccount
// from internal/controller/utils/sahandler.go, NewSAHandler): the Job volsync-rsync-tls-dst-<rd>
// is controlled by the ReplicationDestination and labelled app.kubernetes.io/created-by=volsync;
// its pod template carries the Service's selector (app.kubernetes.io/name=dst-<rd>,
// app.kubernetes.io/component=rsync-tls-mover, app.kubernetes.io/part-of=volsync) and that
// label, runs as the ServiceAccount volsync-dst-<rd> (owned by the RD; the lab's API types have no
// spec.rsyncTLS.moverServiceAccount, which upstream uses instead when set), and mounts the destination PVC (the one
// spec.rsyncTLS.destinationPVC names, else volsync-<rd>-dst, whatever the copyMethod: the
// snapshot is taken of it after a sync) as volume "data", and the key Secret as "keys". The
// Job controller of kube-controller-manager creates the pod, the API server admits it or not
// (drover's fence is a validating webhook on pods), the scheduler binds it and kwok runs it on a
// fake node. The listener accepts connections only while that pod runs: a pod the API server
// refused means no sync, as a refused mover pod does upstream.
//
// Upstream runs one Job per sync and cleans it up after it completes; kwok completes a Job's pod
// as soon as it runs, so the lab makes one Job per destination (and per destination PVC) and
// takes a pod of it that ran (Running or Succeeded) for the mover of every sync: the fence is
// met once, when the destination is made, not at each sync. A Job made while the destination is
// paused has parallelism 0, as upstream's. A source's mover is still the file copy of
// rsync.go: drover's sources use copyMethod Snapshot, whose upstream mover mounts a
// temporary PVC restored from a snapshot of the source (volsync-<rs>-src), not the source PVC.
const (
	moverJobPrefix        = "volsync-rsync-tls-dst-"
	moverDataVolume       = "data"
	labelCreatedBy        = "app.kubernetes.io/created-by"
	labelCreatedByVolSync = "volsync"
	// labelJobControllerUID is the label the Job controller puts on the pods it creates.
	labelJobControllerUID = "batch.kubernetes.io/controller-uid"
	// moverImage is VolSync's mover image; kwok never pulls it.
	moverImage = "quay.io/backube/volsync:latest"
)

// boundedName is prefix+name, or prefix and a hash of name when that is longer than a label
// value may be (upstream shortens the same way, with another hash).
func boundedName(prefix, name string) string {
	if len(prefix+name) <= 63 {
		return prefix + name
	}
	sum := sha256.Sum256([]byte(name))
	return prefix + hex.EncodeToString(sum[:])[:16]
}

// ensureDestinationMover ensures the mover's ServiceAccount and Job and sets sc.moverClosed to
// why no mover pod runs yet; empty once one runs.
func (s *store) ensureDestinationMover(ctx context.Context, sc *rdScope) (ctrl.Result, error) {
	rd := sc.rd
	sa := "volsync-dst-" + rd.Name
	obj := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: rd.Namespace, Name: sa,
		Labels: map[string]string{labelCreatedBy: labelCreatedByVolSync}}}
	if err := s.createOwned(ctx, rd, obj, "mover ServiceAccount"); err != nil {
		return ctrl.Result{}, err
	}
	privileged, err := s.privilegedMovers(ctx, rd.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	job := &batchv1.Job{}
	name := boundedName(moverJobPrefix, rd.Name)
	want := destinationMoverJob(rd, name, sa, sc.pvcName, sc.keyName, privileged)
	err = s.Client.Get(ctx, client.ObjectKey{Namespace: rd.Namespace, Name: name}, job)
	if apierrors.IsNotFound(err) {
		if err := s.createOwned(ctx, rd, want, "mover Job"); err != nil {
			return ctrl.Result{}, err
		}
		sc.moverClosed = fmt.Sprintf("its mover Job %s was just created", name)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if changed := moverJobChanged(job, want); changed != "" {
		// A Job's pod template cannot change: it goes, and the next pass makes it anew, as
		// upstream's CreateOrUpdateDeleteOnImmutableErr does.
		if err := s.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("failed to delete mover Job %s (%s): %w", klog.KObj(job), changed, err)
		}
		sc.moverClosed = fmt.Sprintf("its mover Job %s %s and is replaced", name, changed)
		return ctrl.Result{}, nil
	}
	if sc.moverClosed, err = s.moverPodState(ctx, job); err != nil || sc.moverClosed != "" {
		return ctrl.Result{}, err
	}
	sc.moverClosed = moverCannotStart(&job.Spec.Template.Spec)
	sc.moverRefuses = destinationRefusal(&job.Spec.Template.Spec)
	return ctrl.Result{}, nil
}

// moverJobChanged says how a mover Job's pod differs from the one wanted: another PVC, or
// another identity (the spec's moverSecurityContext or the namespace's privileged-movers
// annotation changed). "" when it is the same.
func moverJobChanged(job, want *batchv1.Job) string {
	if claim := moverClaim(job); claim != moverClaim(want) {
		return "mounted PVC " + claim
	}
	have, wanted := &job.Spec.Template.Spec, &want.Spec.Template.Spec
	// The API server defaults a pod's missing securityContext to an empty one.
	orEmpty := func(sc *corev1.PodSecurityContext) *corev1.PodSecurityContext {
		if sc == nil {
			return &corev1.PodSecurityContext{}
		}
		return sc
	}
	if !equality.Semantic.DeepEqual(orEmpty(have.SecurityContext), orEmpty(wanted.SecurityContext)) ||
		len(have.Containers) != 1 || !equality.Semantic.DeepEqual(have.Containers[0].SecurityContext, wanted.Containers[0].SecurityContext) {
		return "ran with another security context"
	}
	return ""
}

// moverClaim is the PVC a mover Job's pods mount as their data volume.
func moverClaim(job *batchv1.Job) string {
	for _, v := range job.Spec.Template.Spec.Volumes {
		if v.Name == moverDataVolume && v.PersistentVolumeClaim != nil {
			return v.PersistentVolumeClaim.ClaimName
		}
	}
	return ""
}

// moverPodState says why no pod of the Job runs; empty when one runs or ran. A pod that
// completed is deleted, as upstream deletes a completed mover Job with its pod: a completed pod
// left behind would keep its PVC in use for the PVC protection controller.
func (s *store) moverPodState(ctx context.Context, job *batchv1.Job) (string, error) {
	pods := &corev1.PodList{}
	if err := s.Client.List(ctx, pods, client.InNamespace(job.Namespace), client.MatchingLabels{labelJobControllerUID: string(job.UID)}); err != nil {
		return "", fmt.Errorf("failed to list the pods of mover Job %s: %w", klog.KObj(job), err)
	}
	ran := job.Status.Succeeded > 0
	for i := range pods.Items {
		p := &pods.Items[i]
		switch p.Status.Phase {
		case corev1.PodRunning:
			ran = true
		case corev1.PodSucceeded:
			// kwok completes a Job's pod as soon as it runs: a pod that ran was admitted,
			// scheduled and started, which is what a sync needs of it here.
			ran = true
			if p.DeletionTimestamp.IsZero() {
				if err := s.Client.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
					return "", fmt.Errorf("failed to delete the completed pod %s of mover Job %s: %w", p.Name, job.Name, err)
				}
			}
		}
	}
	switch {
	case ran:
		return "", nil
	case len(pods.Items) > 0:
		return fmt.Sprintf("the pod of its mover Job %s does not run yet", job.Name), nil
	}
	if refused := s.jobRefusal(ctx, job); refused != "" {
		return fmt.Sprintf("its mover Job %s has no pod: %s", job.Name, refused), nil
	}
	return fmt.Sprintf("its mover Job %s has no pod: the Job's events say why the API server refused it, if it did", job.Name), nil
}

// createOwned creates obj controlled by the destination unless it exists.
func (s *store) createOwned(ctx context.Context, rd *volsyncv1alpha1.ReplicationDestination, obj client.Object, what string) error {
	if err := s.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
		return err
	}
	if err := controllerutil.SetControllerReference(rd, obj, s.Client.Scheme()); err != nil {
		return err
	}
	if err := s.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return createFailed(err, what, obj)
	}
	ctrl.LoggerFrom(ctx).Info("Created "+what, "object", klog.KObj(obj))
	return nil
}

// destinationMoverJob is the Job VolSync makes for a destination (ensureJob), its pod as
// moverPodSpec builds it.
func destinationMoverJob(rd *volsyncv1alpha1.ReplicationDestination, name, sa, pvc, keySecret string, privileged bool) *batchv1.Job {
	podLabels := map[string]string{
		"app.kubernetes.io/name":      boundedName("dst-", rd.Name),
		"app.kubernetes.io/component": "rsync-tls-mover",
		"app.kubernetes.io/part-of":   "volsync",
		labelCreatedBy:                labelCreatedByVolSync,
	}
	parallelism := int32(1)
	if closedReason(rd) != "" {
		parallelism = 0
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: rd.Namespace, Name: name, Labels: map[string]string{labelCreatedBy: labelCreatedByVolSync}},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To(int32(2)),
			Parallelism:  ptr.To(parallelism),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: podLabels},
				Spec:       moverPodSpec("/mover-rsync-tls/server.sh", sa, pvc, keySecret, rd.Spec.RsyncTLS.MoverSecurityContext, privileged),
			},
		},
	}
}
