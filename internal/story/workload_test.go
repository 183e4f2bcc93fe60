package story

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/pod-security-admission/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/lab/kubelet"
	"github.com/drover-io/drover/internal/lab/storage"
	"github.com/drover-io/drover/internal/podsecurity"
)

// podTemplate returns the pod template of the workload among objs.
func podTemplate(g Gomega, objs []client.Object) *corev1.PodTemplateSpec {
	for _, o := range objs {
		switch w := o.(type) {
		case *appsv1.StatefulSet:
			return &w.Spec.Template
		case *appsv1.Deployment:
			return &w.Spec.Template
		}
	}
	g.Expect(objs).To(ContainElement(BeAssignableToTypeOf(&appsv1.StatefulSet{})), "the manifests hold a workload")
	return nil
}

func TestTheWorkloadsPodsWriteThemselvesOnTheLabKubeletsNodeOnlyWithAppProcesses(t *testing.T) {
	for _, tc := range []struct {
		workload  Workload
		processes bool
		volume    string
	}{
		{StatefulSetKeepsPVCs, false, ""},
		{StatefulSetKeepsPVCs, true, "data-$(POD_NAME)=/data"},
		{StatefulSetDeletesPVCs, true, "data-$(POD_NAME)=/data"},
		{DeploymentWithPVC, false, ""},
		{DeploymentWithPVC, true, "data-db=/data"},
	} {
		t.Run(string(tc.workload), func(t *testing.T) {
			g := NewWithT(t)
			objs, err := manifests(tc.workload, 3, "lab-block", tc.processes)
			g.Expect(err).NotTo(HaveOccurred())
			pod := podTemplate(g, objs)
			c := pod.Spec.Containers[0]
			g.Expect(c.Image).To(Equal(storage.WriterImage))
			restricted := api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}
			g.Expect(podsecurity.Violations(restricted, &pod.ObjectMeta, &pod.Spec)).To(BeEmpty(), "the restricted Pod Security level admits the pods")
			if !tc.processes {
				g.Expect(pod.Labels).To(HaveKeyWithValue(storage.WriterLabel, "true"), "the storage writes for pods on fake nodes")
				g.Expect(pod.Spec.NodeSelector).To(BeEmpty())
				g.Expect(c.Command).To(BeEmpty())
				return
			}
			g.Expect(pod.Labels).To(HaveKeyWithValue(storage.WriterLabel, storage.WriterProcess), "the storage writes nothing for the pods")
			g.Expect(pod.Spec.NodeSelector).To(HaveKeyWithValue(kubelet.NodeLabel, "true"))
			g.Expect(pod.Spec.Tolerations).To(ContainElement(HaveField("Key", kubelet.NodeLabel)))
			g.Expect(pod.Spec.AutomountServiceAccountToken).To(HaveValue(BeFalse()), "the writer needs no token")
			g.Expect(c.Command).To(Equal([]string{"drover", "lab", "writer"}))
			g.Expect(c.Args).To(Equal([]string{"--volume", tc.volume}))
			g.Expect(c.Env).To(ContainElements(
				HaveField("Name", "POD_NAME"), HaveField("Name", "POD_UID"),
				corev1.EnvVar{Name: "LAB_WRITER_STATUS_DIR", Value: storage.WriterStatusMountPath}))
		})
	}
}
