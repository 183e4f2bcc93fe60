package vrg_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	"github.com/drover-io/drover/internal/kubeobjects"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/objectstore"
)

// The stores are untrusted (docs/security.md, "The S3 stores"): each test writes into west's
// real S3 server what a holder of write access to its bucket could, then fails a group over to
// west, whose agent must refuse it with a condition naming the store and the object, and
// create nothing from it, while another group restores as usual.

// forgedGroup is a group failing over to west that reads only west's store, whose objects the
// test wrote: on a failover the lost peer's store is usually down anyway.
func forgedGroup(g Gomega, ns, app string) (*v1alpha1.VolumeReplicationGroup, objectstore.Store) {
	profiles, stores := vrglab.S3Profiles(g)
	group := vrglab.PrimaryVRG(ns, "db", "db", "3s", profiles[1:])
	group.Spec.ProtectedNamespaces = []string{app}
	group.Spec.Action = v1alpha1.ActionFailover
	return group, stores[1]
}

func putJSON(g Gomega, store objectstore.Store, key string, v any) {
	body, err := json.Marshal(v)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(store.Put(context.Background(), key, body)).To(Succeed())
}

// expectRefused waits until condition t of the group on west is False with
// ReasonStoreObjectRefused, naming west's store and the key, and returns its message.
func expectRefused(g Gomega, cl client.Client, group *v1alpha1.VolumeReplicationGroup, t, key string) string {
	var msg string
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(cl.Get(context.Background(), client.ObjectKeyFromObject(group), got)).To(Succeed())
		c := vrglab.ConditionOf(got.Status.Conditions, t)
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonStoreObjectRefused), "%s: %s: %s", t, c.Reason, c.Message)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Message).To(ContainSubstring(fmt.Sprintf("S3 profile %s", lab.S3ProfileName(lab.West))))
		g.Expect(c.Message).To(ContainSubstring(fmt.Sprintf("%q", key)))
		msg = c.Message
	}).Should(Succeed())
	return msg
}

func rawObject(apiVersion, kind, ns, name string, fields map[string]any) map[string]any {
	meta := map[string]any{"name": name}
	if ns != "" {
		meta["namespace"] = ns
	}
	o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": meta}
	for k, v := range fields {
		o[k] = v
	}
	return o
}

func TestAForgedCaptureIsRefusedAndCreatesNothingInKubeSystem(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	west := vrglab.ClusterClient(t, lab.West)
	ns, app := "forged-capture-dr", "forged-capture-app"
	g.Expect(west.Create(ctx, adminNamespace(ns))).To(Succeed())
	group, store := forgedGroup(g, ns, app)
	group.Spec.KubeObjectProtection = &v1alpha1.KubeObjectProtectionSpec{}
	forged := map[string]any{"version": 1, "capturedAt": "2026-01-02T03:04:05Z", "namespaces": []string{app, "kube-system"},
		"objects": []any{
			rawObject("v1", "Namespace", "", app, map[string]any{"metadata": map[string]any{"name": app,
				"labels": map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}}}),
			rawObject("rbac.authorization.k8s.io/v1", "Role", "kube-system", "forged-all", map[string]any{
				"rules": []any{map[string]any{"apiGroups": []string{"*"}, "resources": []string{"*"}, "verbs": []string{"*"}}}}),
			rawObject("rbac.authorization.k8s.io/v1", "RoleBinding", "kube-system", "forged-all", map[string]any{
				"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "forged-all"},
				"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated"}}}),
			rawObject("apps/v1", "DaemonSet", "kube-system", "forged-root", map[string]any{"spec": map[string]any{
				"selector": map[string]any{"matchLabels": map[string]string{"app": "forged-root"}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]string{"app": "forged-root"}},
					"spec": map[string]any{"hostPID": true, "containers": []any{map[string]any{"name": "root", "image": "lab/writer",
						"securityContext": map[string]any{"privileged": true}}}}}}}),
		}}
	key := vrg.StorePrefix(group) + kubeobjects.StoreKey
	putJSON(g, store, key, forged)

	// Another group, in another namespace, restores its own capture from the same store.
	otherNS, otherApp := "forged-capture-other-dr", "forged-capture-other-app"
	g.Expect(west.Create(ctx, adminNamespace(otherNS))).To(Succeed())
	other, _ := forgedGroup(g, otherNS, otherApp)
	other.Spec.KubeObjectProtection = &v1alpha1.KubeObjectProtectionSpec{}
	putJSON(g, store, vrg.StorePrefix(other)+kubeobjects.StoreKey, map[string]any{"version": 1, "capturedAt": "2026-01-02T03:04:05Z",
		"namespaces": []string{otherApp}, "objects": []any{
			rawObject("v1", "Namespace", "", otherApp, nil),
			rawObject("v1", "ConfigMap", otherApp, "conf", map[string]any{"data": map[string]string{"k": "v"}}),
		}})

	g.Expect(west.Create(ctx, group)).To(Succeed())
	g.Expect(west.Create(ctx, other)).To(Succeed())
	msg := expectRefused(g, west, group, v1alpha1.ConditionKubeObjectsReady, key)
	t.Logf("KubeObjectsReady: %s", msg)
	g.Expect(msg).To(ContainSubstring("is outside the group's protected namespaces [" + app + "]"))
	for _, o := range []client.Object{
		&metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"}, ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "forged-all"}},
		&metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"}, ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "forged-all"}},
		&metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"}, ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "forged-root"}},
	} {
		err := west.Get(ctx, client.ObjectKeyFromObject(o), o)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s %s is not created: %v", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
	}
	appNS := &corev1.Namespace{}
	g.Expect(west.Get(ctx, client.ObjectKey{Name: app}, appNS)).To(Succeed(), "the restore created the protected namespace bare")
	g.Expect(appNS.Labels).NotTo(HaveKey("pod-security.kubernetes.io/enforce"))
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(other), got)).To(Succeed())
		c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionKubeObjectsReady)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: otherApp, Name: "conf"}, &corev1.ConfigMap{})).To(Succeed())
	}).Should(Succeed(), "the other group restores its objects")
}

func TestAForgedPVIsRefusedAndItsSecretsComeFromTheStorageClass(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	west := vrglab.ClusterClient(t, lab.West)
	app := "forged-pv-app"
	g.Expect(west.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: app}})).To(Succeed())
	// Another application's volume on west, which a forged PV names by its handle.
	tenant := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "forged-pv-tenant-b"}, Spec: corev1.PersistentVolumeSpec{
		Capacity: corev1.ResourceList{corev1.ResourceStorage: vrglab.PVCSpec().Resources.Requests[corev1.ResourceStorage]}, AccessModes: vrglab.PVCSpec().AccessModes,
		StorageClassName: lab.BlockStorageClass, PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: lab.BlockDriver, VolumeHandle: "forged-pv-tenant-b-image"}},
	}}
	g.Expect(west.Create(ctx, tenant)).To(Succeed())
	t.Cleanup(func() { _ = west.Delete(context.Background(), tenant) })

	stored := func(name string, src corev1.PersistentVolumeSource) (*corev1.PersistentVolume, *corev1.PersistentVolumeClaim) {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: app, Name: name, Labels: map[string]string{"app": "db"}}, Spec: vrglab.PVCSpec()}
		pvc.Spec.VolumeName = "forged-pv-" + name
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvc.Spec.VolumeName}, Spec: corev1.PersistentVolumeSpec{
			Capacity: tenant.Spec.Capacity, AccessModes: pvc.Spec.AccessModes, StorageClassName: lab.BlockStorageClass,
			ClaimRef: &corev1.ObjectReference{Namespace: app, Name: name}, PersistentVolumeSource: src,
		}}
		return pv, pvc
	}
	cases := map[string]corev1.PersistentVolumeSource{
		"host":    {HostPath: &corev1.HostPathVolumeSource{Path: "/"}},
		"foreign": {CSI: &corev1.CSIPersistentVolumeSource{Driver: lab.BlockDriver, VolumeHandle: "forged-pv-tenant-b-image"}},
	}
	refusedWant := map[string]string{
		"host":    "is not a CSI volume with a driver and a volume handle",
		"foreign": "has the volume handle of PV forged-pv-tenant-b of this cluster",
	}
	for name, src := range cases {
		ns := "forged-pv-" + name + "-dr"
		g.Expect(west.Create(ctx, adminNamespace(ns))).To(Succeed())
		group, store := forgedGroup(g, ns, app)
		group.Spec.PVCSelector = metav1.LabelSelector{MatchLabels: map[string]string{"app": "none"}}
		pv, pvc := stored(name, src)
		pvKey := vrg.PVKey(vrg.StorePrefix(group), pv.Name)
		putJSON(g, store, pvKey, pv)
		putJSON(g, store, vrg.PVCKey(vrg.StorePrefix(group), pvc.Namespace, pvc.Name), pvc)
		g.Expect(west.Create(ctx, group)).To(Succeed())
		msg := expectRefused(g, west, group, v1alpha1.ConditionClusterDataReady, pvKey)
		g.Expect(msg).To(ContainSubstring(refusedWant[name]))
		t.Logf("%s: ClusterDataReady: %s", name, msg)
		g.Expect(apierrors.IsNotFound(west.Get(ctx, client.ObjectKey{Name: pv.Name}, &corev1.PersistentVolume{}))).To(BeTrue(), "PV %s is not created", pv.Name)
		g.Expect(apierrors.IsNotFound(west.Get(ctx, client.ObjectKeyFromObject(pvc), &corev1.PersistentVolumeClaim{}))).To(BeTrue(), "PVC %s is not created", pvc.Name)
	}

	// A CSI volume of the group's own class is restored, without the stored nodeStageSecretRef
	// to another namespace's Secret: the lab's class names none.
	ns := "forged-pv-secret-dr"
	g.Expect(west.Create(ctx, adminNamespace(ns))).To(Succeed())
	group, store := forgedGroup(g, ns, app)
	group.Spec.PVCSelector = metav1.LabelSelector{MatchLabels: map[string]string{"app": "none"}}
	pv, pvc := stored("secret", corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
		Driver: lab.BlockDriver, VolumeHandle: "forged-pv-secret-image",
		NodeStageSecretRef: &corev1.SecretReference{Namespace: "kube-system", Name: "tenant-b-ceph-admin"},
	}})
	pvc.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "someone-elses"}
	putJSON(g, store, vrg.PVKey(vrg.StorePrefix(group), pv.Name), pv)
	putJSON(g, store, vrg.PVCKey(vrg.StorePrefix(group), pvc.Namespace, pvc.Name), pvc)
	g.Expect(west.Create(ctx, group)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &corev1.PersistentVolume{}
		g.Expect(west.Get(ctx, client.ObjectKey{Name: pv.Name}, got)).To(Succeed())
		g.Expect(got.Spec.CSI.NodeStageSecretRef).To(BeNil(), "the stored secret reference is not restored")
		claim := &corev1.PersistentVolumeClaim{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(pvc), claim)).To(Succeed())
		g.Expect(claim.Spec.DataSource).To(BeNil())
	}).Should(Succeed(), "the group's own volume is restored")
	t.Cleanup(func() {
		_ = west.Delete(context.Background(), &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pv.Name}})
	})
}

func TestAGigabyteCaptureIsRefusedBeforeItIsRead(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	west := vrglab.ClusterClient(t, lab.West)
	ns, app := "huge-capture-dr", "huge-capture-app"
	g.Expect(west.Create(ctx, adminNamespace(ns))).To(Succeed())
	group, store := forgedGroup(g, ns, app)
	group.Spec.KubeObjectProtection = &v1alpha1.KubeObjectProtectionSpec{}
	key := vrg.StorePrefix(group) + kubeobjects.StoreKey
	g.Expect(store.Put(ctx, key, []byte("{}"))).To(Succeed())
	c, err := vrglab.Lab().Cluster(lab.West)
	g.Expect(err).NotTo(HaveOccurred())
	// A sparse file: the server serves 1 GiB, the disk holds nothing.
	g.Expect(os.Truncate(c.S3ObjectPath(key), 1<<30)).To(Succeed())
	t.Cleanup(func() { _ = store.Delete(context.Background(), key) })
	g.Expect(west.Create(ctx, group)).To(Succeed())
	msg := expectRefused(g, west, group, v1alpha1.ConditionKubeObjectsReady, key)
	g.Expect(msg).To(ContainSubstring("the object is 1073741824 bytes, more than the limit of 67108864: refused before reading it"))
	t.Logf("KubeObjectsReady: %s", msg)
}

func TestAMarkerOfEpochMaxInt64IsRefusedAndTheGroupClaimsFromTheOtherStore(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	west := vrglab.ClusterClient(t, lab.West)
	ns := "maxint-epoch-dr"
	g.Expect(west.Create(ctx, adminNamespace(ns))).To(Succeed())
	profiles, stores := vrglab.S3Profiles(g)
	group := vrglab.PrimaryVRG(ns, "db", "db", "3s", []v1alpha1.S3Profile{profiles[1], profiles[0]})
	group.Spec.Action = v1alpha1.ActionFailover
	key := vrg.StorePrefix(group) + vrg.MarkerKey
	putJSON(g, stores[1], key, vrg.PrimaryMarker{Cluster: lab.East, Epoch: math.MaxInt64, Since: metav1.Now()})
	g.Expect(west.Create(ctx, group)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		var claim struct{ Epoch int64 }
		g.Expect(json.Unmarshal([]byte(got.Annotations[vrg.AnnotationPrimaryEpoch]), &claim)).To(Succeed())
		g.Expect(claim.Epoch).To(Equal(int64(1)), "the claim counts from east's store, which holds no marker")
		refused := false
		for _, c := range got.Status.Conditions {
			g.Expect(c.Reason).NotTo(BeElementOf(v1alpha1.ReasonStalePrimary, v1alpha1.ReasonSplitBrain), "%s: %s", c.Type, c.Message)
			if c.Reason == v1alpha1.ReasonStoreObjectRefused {
				g.Expect(c.Message).To(ContainSubstring(fmt.Sprintf("S3 profile %s", lab.S3ProfileName(lab.West))))
				g.Expect(c.Message).To(ContainSubstring(fmt.Sprintf("%q", key)))
				g.Expect(c.Message).To(ContainSubstring("its epoch 9223372036854775807 is outside [0, 1099511627776)"))
				t.Logf("%s: %s", c.Type, c.Message)
				refused = true
			}
		}
		g.Expect(refused).To(BeTrue(), "a condition names the refused marker: %v", got.Status.Conditions)
		m, err := vrg.ReadMarker(ctx, stores[0], vrg.StorePrefix(group))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(m).To(Equal(ptr.To(vrg.PrimaryMarker{Cluster: lab.West, Epoch: 1, Since: m.Since, Data: m.Data})))
		g.Expect(m.Data).To(BeElementOf("", "claims/1-west/"), "the data it restored from, then its own")
	}).Should(Succeed())
}

// TestAForgedCaptureCannotLowerTheRestoredNamespacesPodSecurity writes, as a holder of west's
// store key could, a capture whose namespace says Pod Security privileged and which holds a
// privileged Deployment in it: west's restore labels the namespace baseline all the same (never
// less, whatever the capture says), refuses the Deployment naming it, restores the rest, and no
// privileged pod runs.
func TestAForgedCaptureCannotLowerTheRestoredNamespacesPodSecurity(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	west := vrglab.ClusterClient(t, lab.West)
	ns, app := "forged-psa-dr", "forged-psa-app"
	g.Expect(west.Create(ctx, adminNamespace(ns))).To(Succeed())
	group, store := forgedGroup(g, ns, app)
	group.Spec.KubeObjectProtection = &v1alpha1.KubeObjectProtectionSpec{}
	root, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rootDeployment(app))
	g.Expect(err).NotTo(HaveOccurred())
	root["apiVersion"], root["kind"] = "apps/v1", "Deployment"
	key := vrg.StorePrefix(group) + kubeobjects.StoreKey
	putJSON(g, store, key, map[string]any{"version": 1, "capturedAt": "2026-01-02T03:04:05Z", "namespaces": []string{app},
		"objects": []any{
			rawObject("v1", "Namespace", "", app, map[string]any{"metadata": map[string]any{"name": app,
				"labels": map[string]string{"pod-security.kubernetes.io/enforce": "privileged", "team": "forged"}}}),
			rawObject("v1", "ConfigMap", app, "conf", map[string]any{"data": map[string]string{"k": "v"}}),
			root,
		}})
	g.Expect(west.Create(ctx, group)).To(Succeed())
	var ko metav1.Condition
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		ko = vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionKubeObjectsReady)
		g.Expect(ko.Reason).NotTo(Or(Equal(v1alpha1.ReasonProgressing), Equal("Unknown"), BeEmpty()), ko.Message)
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: app, Name: "conf"}, &corev1.ConfigMap{})).To(Succeed(), "the ConfigMap is restored")
	}).Should(Succeed(), "west restores the capture")
	t.Logf("KubeObjectsReady: %s %s: %s", ko.Status, ko.Reason, ko.Message)
	appNS := &corev1.Namespace{}
	g.Expect(west.Get(ctx, client.ObjectKey{Name: app}, appNS)).To(Succeed())
	t.Logf("the restored namespace's labels: %v", appNS.Labels)
	time.Sleep(5 * time.Second) // a restored Deployment's pods come within seconds
	err = west.Get(ctx, client.ObjectKey{Namespace: app, Name: "root"}, &appsv1.Deployment{})
	pods := privilegedPods(g, west, app)
	t.Logf("the forged Deployment on west: %v; privileged pods: %v", err, pods)

	g.Expect(appNS.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "baseline"), "never below baseline")
	g.Expect(appNS.Labels).To(HaveKeyWithValue("team", "forged"), "the other stored labels are restored")
	g.Expect(pods).To(BeEmpty())
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Deployment is not restored: %v", err)
	g.Expect(ko.Reason).To(Equal("PodSecurityRefused"))
	g.Expect(ko.Message).To(ContainSubstring("Deployment.apps " + app + "/root"))
}
