package webhook_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/webhook"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/replication/volsync"
)

// The fence admits, on a fenced PVC, exactly the VolSync mover pod of drover's own
// ReplicationDestination for that PVC, created by the Job controller; every part of that chain
// that is missing or points elsewhere refuses the pod. The objects are real (east's API
// server); the request is what the API server sends for the pod.
func TestTheFenceAdmitsOnlyTheVolSyncMoverOfDroversOwnDestinationForThePVC(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cl, err := testLab.Client(lab.East, volsyncv1alpha1.AddToScheme)
	g.Expect(err).NotTo(HaveOccurred())
	ns := "fence-movers"
	g.Expect(cl.Create(ctx, namespace(ns))).To(Succeed())
	fence := webhook.Fence{VRG: types.NamespacedName{Namespace: ns, Name: "db"}, Reason: webhook.ReasonSecondary}
	group := &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}}
	rd := func(name, pvc string, labels map[string]string) *volsyncv1alpha1.ReplicationDestination {
		d := &volsyncv1alpha1.ReplicationDestination{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: volsyncv1alpha1.ReplicationDestinationSpec{RsyncTLS: &volsyncv1alpha1.ReplicationDestinationRsyncTLSSpec{
				DestinationPVC: ptr.To(pvc), CopyMethod: volsyncv1alpha1.CopyMethodSnapshot}}}
		g.Expect(cl.Create(ctx, d)).To(Succeed())
		return d
	}
	job := func(name string, owner client.Object, kind string) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "none"}}}}}}
		if owner != nil {
			j.OwnerReferences = []metav1.OwnerReference{{APIVersion: volsyncv1alpha1.GroupVersion.String(), Kind: kind,
				Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true)}}
		}
		g.Expect(cl.Create(ctx, j)).To(Succeed())
		return j
	}
	pod := func(j *batchv1.Job, pvc, sa string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: j.Name + "-x",
			Labels:          map[string]string{"app.kubernetes.io/created-by": "volsync"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: j.Name, UID: j.UID, Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{ServiceAccountName: sa, Volumes: []corev1.Volume{{Name: "data",
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc}}}}}}
	}
	request := func(user string) admission.Request {
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: ns,
			UserInfo: authenticationv1.UserInfo{Username: user}}}
	}

	own := rd("data-db-0", "data-db-0", volsync.GroupLabels(group))
	ownJob := job("volsync-rsync-tls-dst-data-db-0", own, "ReplicationDestination")
	strangers := rd("stranger", "data-db-0", nil)
	strangersJob := job("volsync-rsync-tls-dst-stranger", strangers, "ReplicationDestination")
	otherPVC := rd("data-db-1", "data-db-1", volsync.GroupLabels(group))
	otherPVCJob := job("volsync-rsync-tls-dst-data-db-1", otherPVC, "ReplicationDestination")
	orphanJob := job("volsync-rsync-tls-dst-orphan", nil, "")
	badlyNamed := job("mover-data-db-0", own, "ReplicationDestination")
	forgedUID := pod(ownJob, "data-db-0", "volsync-dst-data-db-0")
	forgedUID.OwnerReferences[0].UID = "not-the-jobs-uid"

	const jobController = "system:kube-controller-manager"
	movers := webhook.ClusterMovers{Reader: cl}
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		user  string
		admit bool
	}{
		{"the mover of drover's destination for the PVC, created by the Job controller", pod(ownJob, "data-db-0", "volsync-dst-data-db-0"), jobController, true},
		{"the same pod created by a person", pod(ownJob, "data-db-0", "volsync-dst-data-db-0"), "lab-admin", false},
		{"the same pod naming another UID for its Job", forgedUID, jobController, false},
		{"the same pod under another ServiceAccount", pod(ownJob, "data-db-0", "default"), jobController, false},
		{"a pod of drover's destination mounting another fenced PVC", pod(ownJob, "data-db-9", "volsync-dst-data-db-0"), jobController, false},
		{"the mover of a destination drover did not make", pod(strangersJob, "data-db-0", "volsync-dst-stranger"), jobController, false},
		{"the mover of drover's destination for another PVC", pod(otherPVCJob, "data-db-0", "volsync-dst-data-db-1"), jobController, false},
		{"a pod of a Job no destination controls", pod(orphanJob, "data-db-0", "volsync-dst-data-db-0"), jobController, false},
		{"a pod of a Job not named as VolSync names its movers", pod(badlyNamed, "data-db-0", "volsync-dst-data-db-0"), jobController, false},
	} {
		ok, why, err := movers.OwnMover(ctx, request(tc.user), tc.pod, tc.pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName, fence)
		g.Expect(err).NotTo(HaveOccurred(), tc.name)
		g.Expect(ok).To(Equal(tc.admit), "%s: %s", tc.name, why)
		t.Logf("%s: admitted %v %s", tc.name, ok, why)
	}
}
