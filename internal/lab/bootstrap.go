package lab

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/drover-io/drover/config/crd"
	"github.com/drover-io/drover/internal/lab/crds"
)

// Lab storage: two CSI-like drivers whose volumes are directories.
const (
	// BlockDriver provisions mirrored volumes, like Ceph RBD with mirroring: replicated by
	// csi-addons VolumeReplication.
	BlockDriver = "block.lab.drover.io"
	// FileDriver provisions volumes without storage mirroring, like CephFS: replicated by VolSync.
	FileDriver = "file.lab.drover.io"
	// BlockStorageClass is the default storage class of a managed cluster, provisioned by BlockDriver.
	BlockStorageClass = "lab-block"
	// FileStorageClass is provisioned by FileDriver.
	FileStorageClass = "lab-file"
	// FileWFFCStorageClass is FileStorageClass with volumeBindingMode WaitForFirstConsumer, the
	// binding of the default classes of EBS, GCE PD and Azure Disk: a PVC of it is provisioned
	// only once the scheduler picked a node for a pod that uses it (storage/binding.go).
	FileWFFCStorageClass = "lab-file-wffc"
	// BlockSnapshotClass and FileSnapshotClass are the VolumeSnapshotClasses of the two drivers.
	BlockSnapshotClass = "lab-block-snapshot"
	FileSnapshotClass  = "lab-file-snapshot"
)

const (
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
	// The attach-detach controller creates VolumeAttachments for a node only when it carries this
	// annotation before its pods are scheduled (LAB-NOTES).
	controllerManagedAttachAnnotation = "volumes.kubernetes.io/controller-managed-attach-detach"
	// fieldOwner is the server-side apply manager of everything the lab creates.
	fieldOwner = "drover-lab"
	// nodesPerCluster fake nodes let a StatefulSet spread its pods.
	nodesPerCluster  = 2
	nodeReadyTimeout = 60 * time.Second
)

// bootstrap creates the objects every lab cluster of the cluster's role needs. It applies them
// server-side, so it is idempotent and runs at every start.
func (c *Cluster) bootstrap(ctx context.Context) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	files, err := c.crdFiles()
	if err != nil {
		return fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	if err := installCRDs(ctx, cl, files); err != nil {
		return fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	if err := apply(ctx, cl, kubeletAPIAdminBinding()); err != nil {
		return fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	if c.lab.opts.RunDrover {
		// Joining creates the S3 profiles' Secrets; the pods of drover-system go to the lab
		// kubelet's node.
		if err := applyPlacement(ctx, cl); err != nil {
			return fmt.Errorf("cluster %s: %w", c.Name, err)
		}
	} else if err := c.applyS3Secrets(ctx, cl); err != nil {
		return fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	if c.Role != RoleManaged {
		return nil
	}
	objs := []client.Object{
		storageClass(BlockStorageClass, BlockDriver, true),
		storageClass(FileStorageClass, FileDriver, false),
		waitForFirstConsumer(storageClass(FileWFFCStorageClass, FileDriver, false)),
		csiDriver(BlockDriver),
		csiDriver(FileDriver),
		snapshotClass(BlockSnapshotClass, BlockDriver),
		snapshotClass(FileSnapshotClass, FileDriver),
	}
	for i := 1; i <= nodesPerCluster; i++ {
		objs = append(objs, fakeNode(fmt.Sprintf("%s-node-%d", c.Name, i)))
	}
	for _, obj := range objs {
		if err := apply(ctx, cl, obj); err != nil {
			return fmt.Errorf("cluster %s: %w", c.Name, err)
		}
	}
	if c.lab.opts.RunDrover {
		if err := c.bootstrapManagedForDrover(ctx, cl); err != nil {
			return fmt.Errorf("cluster %s: %w", c.Name, err)
		}
	}
	return nil
}

// crdFile is one embedded CRD manifest.
type crdFile struct {
	fsys fs.FS
	name string
}

// crdFiles selects the CRDs a cluster of this role serves: drover's own everywhere (the hub's
// kinds and the VRG), OCM's Placement and PlacementDecision on the hub, the storage and VolSync
// APIs on managed clusters, where the lab storage honours them (externalCRDs).
func (c *Cluster) crdFiles() ([]crdFile, error) {
	var files []crdFile
	add := func(fsys fs.FS, keep func(string) bool) {
		names, _ := fs.Glob(fsys, "*/*.yaml")
		more, _ := fs.Glob(fsys, "*.yaml")
		for _, n := range append(names, more...) {
			if keep(path.Base(n)) {
				files = append(files, crdFile{fsys: fsys, name: n})
			}
		}
	}
	// Installed from the release manifests, drover's own CRDs come with them.
	if !c.lab.opts.RunDrover {
		add(crd.Bases, func(string) bool { return true })
	}
	external, err := c.externalCRDs()
	if err != nil {
		return nil, err
	}
	for _, f := range external {
		files = append(files, crdFile{fsys: f.FS, name: f.Name})
	}
	return files, nil
}

// externalCRDs are the CRDs of the external kinds a cluster of this role serves: OCM's on the
// hub, the others on managed clusters. They are the lab's own (crds.External), or with
// Options.UpstreamCRDs the upstream CRDs in that directory, read now: each in place of the lab's
// CRD of its group and kind, and the upstream kinds the lab has no CRD of besides, which nothing
// in the lab acts on.
func (c *Cluster) externalCRDs() ([]crds.File, error) {
	files, err := crds.LoadLab()
	if err != nil {
		return nil, err
	}
	if dir := c.lab.opts.UpstreamCRDs; dir != "" {
		upstream, err := crds.LoadUpstream(dir)
		if err != nil {
			return nil, fmt.Errorf("failed to load the upstream CRDs to serve (%s): %w", crds.UpstreamEnv, err)
		}
		if files, err = crds.Replace(files, upstream); err != nil {
			return nil, err
		}
	}
	return slices.DeleteFunc(files, func(f crds.File) bool {
		isOCM := strings.HasSuffix(f.CRD.Spec.Group, "open-cluster-management.io")
		return isOCM != (c.Role == RoleHub)
	}), nil
}

func installCRDs(ctx context.Context, cl client.Client, files []crdFile) error {
	names := make([]string, 0, len(files))
	for _, f := range files {
		raw, err := fs.ReadFile(f.fsys, f.name)
		if err != nil {
			return fmt.Errorf("failed to read CRD %s: %w", f.name, err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			return fmt.Errorf("failed to decode CRD %s: %w", f.name, err)
		}
		crd.TypeMeta = metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"}
		if err := apply(ctx, cl, crd); err != nil {
			return err
		}
		names = append(names, crd.Name)
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := cl.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return false, nil //nolint:nilerr // not yet visible; poll again
			}
			established := false
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					established = true
				}
			}
			if !established {
				return false, nil
			}
		}
		return true, nil
	})
}

// apply creates or updates obj by server-side apply. obj must carry its TypeMeta.
func apply(ctx context.Context, cl client.Client, obj client.Object) error {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("failed to convert %s: %w", obj.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: raw}
	// Typed objects carry an empty status and a null creationTimestamp; neither is ours to set.
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	if err := cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("failed to apply %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

func storageClass(name, driver string, isDefault bool) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{
		TypeMeta:          metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"},
		ObjectMeta:        metav1.ObjectMeta{Name: name},
		Provisioner:       driver,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
	}
	if isDefault {
		sc.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
	}
	return sc
}

// waitForFirstConsumer makes sc bind its PVCs once a pod that uses them is scheduled.
func waitForFirstConsumer(sc *storagev1.StorageClass) *storagev1.StorageClass {
	sc.VolumeBindingMode = ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)
	return sc
}

func snapshotClass(name, driver string) *snapshotv1.VolumeSnapshotClass {
	return &snapshotv1.VolumeSnapshotClass{
		TypeMeta:       metav1.TypeMeta{APIVersion: "snapshot.storage.k8s.io/v1", Kind: "VolumeSnapshotClass"},
		ObjectMeta:     metav1.ObjectMeta{Name: name},
		Driver:         driver,
		DeletionPolicy: snapshotv1.VolumeSnapshotContentDelete,
	}
}

func csiDriver(name string) *storagev1.CSIDriver {
	return &storagev1.CSIDriver{
		TypeMeta:   metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "CSIDriver"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.CSIDriverSpec{
			AttachRequired: ptr.To(true),
			PodInfoOnMount: ptr.To(false),
		},
	}
}

func fakeNode(name string) *corev1.Node {
	return &corev1.Node{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Annotations: map[string]string{
				kwokNodeAnnotation:                "fake",
				controllerManagedAttachAnnotation: "true",
			},
			Labels: map[string]string{
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"type":                   "kwok",
			},
		},
	}
}

func (c *Cluster) waitNodesReady(ctx context.Context) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, nodeReadyTimeout, true, func(ctx context.Context) (bool, error) {
		nodes := &corev1.NodeList{}
		if err := cl.List(ctx, nodes); err != nil {
			return false, nil //nolint:nilerr // the API server may still be settling; poll again
		}
		ready := 0
		for _, n := range nodes.Items {
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready >= nodesPerCluster, nil
	})
	if err != nil {
		return fmt.Errorf("cluster %s: fake nodes did not become Ready in %s; see %s", c.Name, nodeReadyTimeout, c.logDir()+"/kwok.log")
	}
	return nil
}

// kubeletAPIAdminBinding lets the API server's kubelet client (apiServerKubeletClient) reach the
// kubelet's API, which the lab kubelet authorizes with a SubjectAccessReview of nodes/proxy, as a
// kubelet with webhook authorization does.
func kubeletAPIAdminBinding() *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: "lab:" + apiServerKubeletClient},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: apiServerKubeletClient}},
	}
}
