package vrg

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/drover-io/drover/internal/objectstore"
)

// boundPV and boundPVC build a PV and the PVC bound to it as a cluster shows them, with every
// cluster-specific field set.
func boundPV(name, ns, claim string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, UID: types.UID("pv-uid-" + name), ResourceVersion: "42", Generation: 3,
			CreationTimestamp: metav1.Now(),
			Finalizers:        []string{"kubernetes.io/pv-protection"},
			ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager"}},
			Annotations: map[string]string{
				"pv.kubernetes.io/provisioned-by":      "block.lab.drover.io",
				"pv.kubernetes.io/bound-by-controller": "yes",
				AnnotationOriginalReclaimPolicy:        "Delete",
			},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              "lab-block",
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: claim,
				UID: types.UID("pvc-uid-" + claim), ResourceVersion: "41",
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "block.lab.drover.io", VolumeHandle: name,
			}},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
	}
}

func boundPVC(ns, name, pv string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, UID: types.UID("pvc-uid-" + name), ResourceVersion: "41",
			CreationTimestamp: metav1.Now(),
			Labels:            map[string]string{"app": "db", LabelProtectedBy: "db"},
			Finalizers:        []string{"kubernetes.io/pvc-protection", PVCFinalizer},
			OwnerReferences:   []metav1.OwnerReference{{Kind: "StatefulSet", Name: "db", UID: "sts-uid"}},
			Annotations: map[string]string{
				"pv.kubernetes.io/bind-completed":          "yes",
				"volume.kubernetes.io/selected-node":       "node-1",
				"volume.kubernetes.io/storage-provisioner": "block.lab.drover.io",
			},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To("lab-block"),
			VolumeName:       pv,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Gi"),
			}},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
}

func TestCleanedMetadataKeepsOnlyWhatAnotherClusterCanUse(t *testing.T) {
	t.Run("a PV keeps its spec and claim name but no cluster identity", func(t *testing.T) {
		g := NewWithT(t)
		in := boundPV("pv-1", "app", "data-db-0")
		out := CleanPV(in)
		g.Expect(out.APIVersion).To(Equal("v1"))
		g.Expect(out.Kind).To(Equal("PersistentVolume"))
		g.Expect(out.Name).To(Equal("pv-1"))
		g.Expect(out.UID).To(BeEmpty())
		g.Expect(out.ResourceVersion).To(BeEmpty())
		g.Expect(out.Generation).To(BeZero())
		g.Expect(out.CreationTimestamp.IsZero()).To(BeTrue())
		g.Expect(out.ManagedFields).To(BeNil())
		g.Expect(out.Finalizers).To(BeNil())
		g.Expect(out.Annotations).To(Equal(map[string]string{
			"pv.kubernetes.io/provisioned-by": "block.lab.drover.io",
			AnnotationOriginalReclaimPolicy:   "Delete",
		}), "binding annotations go; the provisioner and the original reclaim policy stay")
		g.Expect(out.Spec.ClaimRef).To(Equal(&corev1.ObjectReference{
			Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: "app", Name: "data-db-0",
		}))
		g.Expect(out.Spec.CSI.VolumeHandle).To(Equal("pv-1"))
		g.Expect(out.Status).To(Equal(corev1.PersistentVolumeStatus{}))
		g.Expect(in.Spec.ClaimRef.UID).NotTo(BeEmpty(), "the input is not changed")
	})
	t.Run("a PVC keeps its spec and labels but no owners, finalizers or binding annotations", func(t *testing.T) {
		g := NewWithT(t)
		out := CleanPVC(boundPVC("app", "data-db-0", "pv-1"))
		g.Expect(out.Kind).To(Equal("PersistentVolumeClaim"))
		g.Expect(out.Namespace).To(Equal("app"))
		g.Expect(out.UID).To(BeEmpty())
		g.Expect(out.ResourceVersion).To(BeEmpty())
		g.Expect(out.OwnerReferences).To(BeNil())
		g.Expect(out.Finalizers).To(BeNil())
		g.Expect(out.Labels).To(Equal(map[string]string{"app": "db"}), "drover's protection label is not stored")
		g.Expect(out.Annotations).To(Equal(map[string]string{"volume.kubernetes.io/storage-provisioner": "block.lab.drover.io"}))
		g.Expect(out.Spec.VolumeName).To(Equal("pv-1"))
		g.Expect(out.Status).To(Equal(corev1.PersistentVolumeClaimStatus{}))
	})
	t.Run("the JSON has no uid, resourceVersion, creationTimestamp or status", func(t *testing.T) {
		g := NewWithT(t)
		for _, obj := range []any{CleanPV(boundPV("pv-1", "app", "c")), CleanPVC(boundPVC("app", "c", "pv-1"))} {
			body, err := json.Marshal(obj)
			g.Expect(err).NotTo(HaveOccurred())
			var raw map[string]any
			g.Expect(json.Unmarshal(body, &raw)).To(Succeed())
			meta := raw["metadata"].(map[string]any)
			g.Expect(meta).NotTo(HaveKey("uid"))
			g.Expect(meta).NotTo(HaveKey("resourceVersion"))
			g.Expect(meta).NotTo(HaveKey("creationTimestamp"))
			g.Expect(raw["status"]).To(BeEmpty())
		}
	})
}

// countingStore counts the writes reaching a store, and the keys read.
type countingStore struct {
	objectstore.Store
	puts, deletes int
	read          []string
}

func (c *countingStore) Get(ctx context.Context, key string) ([]byte, error) {
	c.read = append(c.read, key)
	return c.Store.Get(ctx, key)
}

func (c *countingStore) List(ctx context.Context, prefix string) ([]string, error) {
	c.read = append(c.read, prefix)
	return c.Store.List(ctx, prefix)
}

// metadataReads counts the reads of the fixture group's PV and PVC metadata, under any claim.
func (c *countingStore) metadataReads() int {
	n := 0
	for _, k := range c.read {
		if strings.HasPrefix(k, "app/db/") && (strings.Contains(k, "/"+pvsDir) || strings.Contains(k, "/"+pvcsDir)) {
			n++
		}
	}
	return n
}

func (c *countingStore) Put(ctx context.Context, key string, body []byte) error {
	c.puts++
	return c.Store.Put(ctx, key, body)
}

func (c *countingStore) Delete(ctx context.Context, key string) error {
	c.deletes++
	return c.Store.Delete(ctx, key)
}

func TestSyncObjectsWritesChangesOnlyAndRemovesWhatIsNoLongerProtected(t *testing.T) {
	ctx := context.Background()
	const prefix = "app/db/"
	objects := map[string][]byte{
		PVKey(prefix, "pv-1"):              []byte(`{"pv":1}`),
		PVCKey(prefix, "app", "data-db-0"): []byte(`{"pvc":0}`),
	}

	t.Run("a first pass writes every object", func(t *testing.T) {
		g := NewWithT(t)
		store := &countingStore{Store: objectstore.NewFake("s3-east")}
		g.Expect(SyncObjects(ctx, store, prefix, objects, nil)).To(Succeed())
		g.Expect(store.puts).To(Equal(2))
		keys, _ := store.List(ctx, prefix)
		g.Expect(keys).To(ConsistOf(PVKey(prefix, "pv-1"), PVCKey(prefix, "app", "data-db-0")))
	})
	t.Run("a second pass with equal bytes writes nothing, a changed object is rewritten", func(t *testing.T) {
		g := NewWithT(t)
		store := &countingStore{Store: objectstore.NewFake("s3-east")}
		g.Expect(SyncObjects(ctx, store, prefix, objects, nil)).To(Succeed())
		g.Expect(SyncObjects(ctx, store, prefix, objects, nil)).To(Succeed())
		g.Expect(store.puts).To(Equal(2))
		changed := map[string][]byte{PVKey(prefix, "pv-1"): []byte(`{"pv":2}`), PVCKey(prefix, "app", "data-db-0"): []byte(`{"pvc":0}`)}
		g.Expect(SyncObjects(ctx, store, prefix, changed, nil)).To(Succeed())
		g.Expect(store.puts).To(Equal(3))
		body, _ := store.Get(ctx, PVKey(prefix, "pv-1"))
		g.Expect(string(body)).To(Equal(`{"pv":2}`))
	})
	t.Run("objects of PVCs no longer selected are deleted, kept ones and other groups stay", func(t *testing.T) {
		g := NewWithT(t)
		store := &countingStore{Store: objectstore.NewFake("s3-east")}
		for _, k := range []string{PVKey(prefix, "pv-old"), PVCKey(prefix, "app", "gone"), PVKey(prefix, "pv-kept"), PVKey("app/other/", "pv-9")} {
			g.Expect(store.Put(ctx, k, []byte("{}"))).To(Succeed())
		}
		keep := map[string]bool{PVKey(prefix, "pv-kept"): true}
		g.Expect(SyncObjects(ctx, store, prefix, objects, keep)).To(Succeed())
		keys, _ := store.List(ctx, "")
		g.Expect(keys).To(ConsistOf(PVKey(prefix, "pv-1"), PVCKey(prefix, "app", "data-db-0"), PVKey(prefix, "pv-kept"), PVKey("app/other/", "pv-9")))
		g.Expect(store.deletes).To(Equal(2))
	})
	t.Run("a store that is down fails with its classified error", func(t *testing.T) {
		g := NewWithT(t)
		fake := objectstore.NewFake("s3-west")
		fake.SetError(objectstore.ErrUnreachable)
		err := SyncObjects(ctx, fake, prefix, objects, nil)
		g.Expect(errors.Is(err, objectstore.ErrUnreachable)).To(BeTrue(), "%v", err)
		g.Expect(objectstore.ReasonOf(err)).To(Equal(objectstore.ReasonStoreUnreachable))
	})
}
