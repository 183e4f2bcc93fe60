package vrg

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/drover-io/drover/api/v1alpha1"
)

// podOf is a pod mounting claim as volume "data" in its container "app", with a pod and a
// container security context.
func podOf(name, claim string, psc *corev1.PodSecurityContext, csc *corev1.SecurityContext) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name},
		Spec: corev1.PodSpec{
			SecurityContext: psc,
			Containers: []corev1.Container{
				{Name: "app", SecurityContext: csc, VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}},
				// A sidecar that does not mount the volume does not write it.
				{Name: "sidecar", SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](0)}},
			},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
			}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func TestTheMoversUserIsTakenFromThePodsOnlyWhenTheyAllWriteAsOneNonRootUser(t *testing.T) {
	app := &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000)}
	appUser := &v1alpha1.VolSyncMoverSecurityContext{RunAsUser: 1000, RunAsGroup: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000)}
	ended := podOf("db-old", "data", &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)}, nil)
	ended.Status.Phase = corev1.PodSucceeded
	withInit := podOf("db-0", "data", app, nil)
	withInit.Spec.InitContainers = []corev1.Container{{Name: "chown", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/d"}},
		SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](0)}}}
	for _, tc := range []struct {
		name string
		pods []corev1.Pod
		want *v1alpha1.VolSyncMoverSecurityContext
		why  string
	}{
		{"the pod's user, group and fsGroup", []corev1.Pod{podOf("db-0", "data", app, nil)}, appUser, ""},
		{"two replicas of one user", []corev1.Pod{podOf("db-0", "data", app, nil), podOf("db-1", "data", app, nil)}, appUser, ""},
		{"the container's user over the pod's", []corev1.Pod{podOf("db-0", "data", app, &corev1.SecurityContext{RunAsUser: ptr.To[int64](26)})},
			&v1alpha1.VolSyncMoverSecurityContext{RunAsUser: 26, RunAsGroup: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000)}, ""},
		{"a pod that ended does not count", []corev1.Pod{ended, podOf("db-0", "data", app, nil)}, appUser, ""},
		{"a pod of another claim does not count", []corev1.Pod{podOf("other", "logs", nil, nil), podOf("db-0", "data", app, nil)}, appUser, ""},
		{"no runAsUser: the image's user is unknown", []corev1.Pod{podOf("db-0", "data", &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000)}, nil)},
			nil, "container app of pod db-0 states no runAsUser"},
		{"root", []corev1.Pod{podOf("db-0", "data", &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)}, nil)}, nil, "container app of pod db-0 runs as root"},
		{"an init container writing as root", []corev1.Pod{withInit}, nil, "container chown of pod db-0 runs as root"},
		{"two users", []corev1.Pod{podOf("db-0", "data", app, nil), podOf("db-1", "data", &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1001)}, nil)},
			nil, "container app of pod db-0 and container app of pod db-1 write it as different users (uid 1000 gid 1000 fsGroup 2000, uid 1001)"},
		{"no pod", nil, nil, "no running pod mounts it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, why := moverUserFromPods(tc.pods, "data")
			g.Expect(got).To(Equal(tc.want))
			if tc.why == "" {
				g.Expect(why).To(BeEmpty())
				return
			}
			g.Expect(why).To(ContainSubstring(tc.why))
		})
	}
}
