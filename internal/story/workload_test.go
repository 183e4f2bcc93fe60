package story

import (
	"testing"
	"time"

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
		volumes   []string
	}{
		{StatefulSetKeepsPVCs, false, nil},
		{StatefulSetKeepsPVCs, true, []string{"data-$(POD_NAME)=/data"}},
		{StatefulSetDeletesPVCs, true, []string{"data-$(POD_NAME)=/data"}},
		{DeploymentWithPVC, false, nil},
		{DeploymentWithPVC, true, []string{"data-db=/data"}},
		{StatefulSetTwoVolumes, false, nil},
		{StatefulSetTwoVolumes, true, []string{"data-$(POD_NAME)=/data", "log-$(POD_NAME)=/log"}},
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
			var args []string
			for _, v := range tc.volumes {
				args = append(args, "--volume", v)
			}
			g.Expect(c.Args).To(Equal(args), "the writer writes its volumes in this order: record n to the first, then its twin to the next")
			g.Expect(c.Env).To(ContainElements(
				HaveField("Name", "POD_NAME"), HaveField("Name", "POD_UID"),
				corev1.EnvVar{Name: "LAB_WRITER_STATUS_DIR", Value: storage.WriterStatusMountPath}))
		})
	}
}

func TestTheTwoVolumeWorkloadsPodsMountADataAndALogClaimOfTheirOwn(t *testing.T) {
	g := NewWithT(t)
	objs, err := manifests(StatefulSetTwoVolumes, 2, "lab-block", true)
	g.Expect(err).NotTo(HaveOccurred())
	var sts *appsv1.StatefulSet
	for _, o := range objs {
		if s, ok := o.(*appsv1.StatefulSet); ok {
			sts = s
		}
	}
	g.Expect(sts).NotTo(BeNil())
	g.Expect(sts.Spec.VolumeClaimTemplates).To(HaveExactElements(HaveField("Name", "data"), HaveField("Name", "log")))
	for _, claim := range sts.Spec.VolumeClaimTemplates {
		g.Expect(claim.Labels).To(Equal(AppLabel), "the DRPlacementControl's selector protects %s", claim.Name)
		g.Expect(claim.Spec.StorageClassName).To(HaveValue(Equal("lab-block")))
	}
	g.Expect(sts.Spec.PersistentVolumeClaimRetentionPolicy).To(BeNil(), "the PVCs are kept when the StatefulSet goes")
	g.Expect(sts.Spec.Template.Spec.Containers[0].VolumeMounts).To(HaveExactElements(
		corev1.VolumeMount{Name: "data", MountPath: "/data"}, corev1.VolumeMount{Name: "log", MountPath: "/log"}))
	g.Expect(sts.Spec.Template.Annotations).To(HaveKeyWithValue(storage.WriterIntervalAnnotation, TwinWriterInterval))
	r := New(Env{}, Case{Workload: StatefulSetTwoVolumes, Replicas: 2}, "east")
	g.Expect(r.interval()).To(Equal(50*time.Millisecond), "the failover's loss bound counts the twin writer's records")
	g.Expect(r.keptPVCs()).To(Equal(4), "recover expects both claims of every replica left on the cluster")
}
