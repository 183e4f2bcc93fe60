package lab_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
)

func clusterClient(g Gomega, name string) client.Client {
	cl, err := testLab.Client(name, v1alpha1.AddToScheme)
	g.Expect(err).NotTo(HaveOccurred())
	return cl
}

// statefulSet builds a StatefulSet with one volumeClaimTemplate "data" of the lab's block class.
func statefulSet(namespace, name string, replicas int32) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(replicas),
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			ServiceName:         name,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "lab/writer",
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: ptr.To(lab.BlockStorageClass),
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceStorage: resource.MustParse("1Gi"),
					}},
				},
			}},
		},
	}
}

func TestStatefulSetGetsBoundAttachedVolumesAndSurvivesClusterStop(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	cl := clusterClient(g, lab.East)

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sts-lab"}}
	g.Expect(cl.Create(ctx, ns)).To(Succeed())
	g.Expect(cl.Create(ctx, statefulSet(ns.Name, "db", 3))).To(Succeed())

	pvcUIDs := map[string]types.UID{}
	pvNames := map[string]bool{}
	g.Eventually(func(g Gomega) {
		pvcs := &corev1.PersistentVolumeClaimList{}
		g.Expect(cl.List(ctx, pvcs, client.InNamespace(ns.Name))).To(Succeed())
		g.Expect(pvcs.Items).To(HaveLen(3))
		for _, pvc := range pvcs.Items {
			g.Expect(pvc.Name).To(HavePrefix("data-db-"))
			g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound), "PVC %s", pvc.Name)
			pv := &corev1.PersistentVolume{}
			g.Expect(cl.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv)).To(Succeed())
			g.Expect(pv.Spec.CSI).NotTo(BeNil())
			g.Expect(pv.Spec.CSI.Driver).To(Equal(lab.BlockDriver))
			pvcUIDs[pvc.Name] = pvc.UID
			pvNames[pv.Name] = true
		}
	}).Should(Succeed(), "the StatefulSet controller creates 3 PVCs and the lab provisions and binds them")

	g.Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(cl.List(ctx, pods, client.InNamespace(ns.Name))).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(3))
		for _, pod := range pods.Items {
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", pod.Name)
		}
		vas := &storagev1.VolumeAttachmentList{}
		g.Expect(cl.List(ctx, vas)).To(Succeed())
		attached := 0
		for _, va := range vas.Items {
			// Only this StatefulSet's volumes: other tests' applications share the cluster.
			pv := va.Spec.Source.PersistentVolumeName
			if va.Spec.Attacher == lab.BlockDriver && va.Status.Attached && pv != nil && pvNames[*pv] {
				attached++
			}
		}
		g.Expect(attached).To(Equal(3), "VolumeAttachments attached")
	}).Should(Succeed(), "pods Running with attached volumes")

	dir, err := testLab.VolumeDir(ctx, lab.East, ns.Name, "data-db-0")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dir).To(BeADirectory(), "the records command reads the image behind a PVC from here")
	_, err = testLab.VolumeDir(ctx, lab.East, ns.Name, "data-db-9")
	g.Expect(err).To(MatchError(ContainSubstring("cluster east has no PVC sts-lab/data-db-9")))

	g.Expect(testLab.Stop(lab.East)).To(Succeed())
	err = cl.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{})
	g.Expect(err).To(HaveOccurred(), "east's API must be unreachable once east is stopped")
	g.Expect(err.Error()).To(Or(ContainSubstring("connection refused"), ContainSubstring("connect:")))

	g.Expect(testLab.Start(ctx, lab.East)).To(Succeed())
	sts := &appsv1.StatefulSet{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "db"}, sts)).To(Succeed())
	for name, uid := range pvcUIDs {
		pvc := &corev1.PersistentVolumeClaim{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: name}, pvc)).To(Succeed())
		g.Expect(pvc.UID).To(Equal(uid), "PVC %s is the same object after the restart", name)
		g.Expect(cl.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, &corev1.PersistentVolume{})).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(cl.List(ctx, pods, client.InNamespace(ns.Name))).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(3))
		for _, pod := range pods.Items {
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
		}
	}).Should(Succeed(), "pods run again after east is back")
}

func TestUpIsIdempotentAndStatusShowsHealthyClusters(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	already, err := testLab.Up(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(already).To(BeTrue(), "a second up on a running lab starts nothing")

	statuses, err := testLab.Status(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(statuses).To(HaveLen(3))
	for _, st := range statuses {
		g.Expect(st.Healthy).To(BeTrue(), "cluster %s: %s", st.Name, st.Problem)
		g.Expect(st.Endpoint).To(HavePrefix("https://127.0.0.1:"))
	}
	var out strings.Builder
	g.Expect(lab.PrintStatus(&out, statuses, true)).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("kube-scheduler"))
}

func TestUnknownClusterNamesTheLabsClusters(t *testing.T) {
	g := NewWithT(t)
	_, err := testLab.Cluster("north")
	g.Expect(err).To(MatchError(ContainSubstring(`no cluster "north"; its clusters are hub, east and west`)))
}

func TestHubServesDroverAPIsAndManagedClustersServeStorageAPIs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	for name, want := range map[string][]string{
		lab.Hub:  {"drplacementcontrols.drover.io", "drpolicies.drover.io", "drclusters.drover.io", "placementdecisions.cluster.open-cluster-management.io", "placements.cluster.open-cluster-management.io"},
		lab.West: {"volumereplicationgroups.drover.io", "volumereplications.replication.storage.openshift.io", "replicationsources.volsync.backube", "volumesnapshots.snapshot.storage.k8s.io"},
	} {
		cl := clusterClient(g, name)
		for _, crd := range want {
			u := &metav1.PartialObjectMetadata{}
			u.SetGroupVersionKind(apiextensionsGVK)
			g.Expect(cl.Get(ctx, client.ObjectKey{Name: crd}, u)).To(Succeed(), "cluster %s serves %s", name, crd)
		}
	}
	for _, class := range []string{lab.BlockSnapshotClass, lab.FileSnapshotClass} {
		u := &metav1.PartialObjectMetadata{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "snapshot.storage.k8s.io", Version: "v1", Kind: "VolumeSnapshotClass"})
		g.Expect(clusterClient(g, lab.East).Get(ctx, client.ObjectKey{Name: class}, u)).To(Succeed(), "east has VolumeSnapshotClass %s", class)
	}
}

var apiextensionsGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

func TestDeadComponentIsNamedByStatusAndStartRepairsTheCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	west := findStatus(g, ctx, lab.West)
	var kwokPID int
	for _, cs := range west.Components {
		if cs.Name == "kwok" {
			kwokPID = cs.PID
		}
	}
	g.Expect(kwokPID).NotTo(BeZero())
	g.Expect(syscall.Kill(kwokPID, syscall.SIGKILL)).To(Succeed())

	g.Eventually(func(g Gomega) {
		st := findStatus(g, ctx, lab.West)
		g.Expect(st.Healthy).To(BeFalse())
		g.Expect(st.Problem).To(ContainSubstring("kwok not running"))
		g.Expect(st.Problem).To(ContainSubstring("drover lab start west"))
	}).WithTimeout(10 * time.Second).Should(Succeed())

	g.Expect(testLab.Start(ctx, lab.West)).To(Succeed())
	g.Expect(findStatus(g, ctx, lab.West).Healthy).To(BeTrue())
}

func findStatus(g Gomega, ctx context.Context, name string) lab.ClusterStatus {
	statuses, err := testLab.Status(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	for _, st := range statuses {
		if st.Name == name {
			return st
		}
	}
	g.Expect(name).To(BeEmpty(), "no status for cluster")
	return lab.ClusterStatus{}
}
