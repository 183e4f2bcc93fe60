package day2

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/objectstore"
)

// storageChecks checks, for each storageClassBackends entry of a policy pairing the cluster,
// that a matching StorageClass exists there and, for its provisioner, a VolumeReplicationClass
// (VolRep) or a VolumeSnapshotClass (VolSync) that the policy's selector selects.
func (v *validator) storageChecks(ctx context.Context, m *managedCluster, p *v1alpha1.DRPolicy) {
	classes := &storagev1.StorageClassList{}
	err := m.cl.List(ctx, classes)
	for _, e := range p.Spec.StorageClassBackends {
		what := "StorageClass " + e.StorageClassName
		if e.StorageClassName == "" {
			what = "provisioner " + e.Provisioner
		}
		check := fmt.Sprintf("%s: %s (%s, %s)", m.name, what, e.Backend, p.Name)
		switch {
		case apierrors.IsForbidden(err):
			v.add(check, Warn, "%s", m.forbidden("list StorageClasses"))
			continue
		case err != nil:
			v.add(check, Fail, "failed to list StorageClasses: %v", err)
			continue
		}
		var provisioners []string
		for _, sc := range classes.Items {
			if sc.Name == e.StorageClassName || (e.Provisioner != "" && sc.Provisioner == e.Provisioner) {
				provisioners = append(provisioners, sc.Provisioner)
			}
		}
		if len(provisioners) == 0 {
			v.add(check, Fail, "no such StorageClass on %s: its PVCs cannot be protected there, nor restored after an action to %s; "+
				"create it, or fix the storageClassBackends of DRPolicy %s", m.name, m.name, p.Name)
			continue
		}
		r, detail := v.replicationClass(ctx, m, p, e.Backend, provisioners[0])
		v.add(check, r, "%s", detail)
	}
}

// replicationClass looks for the class a backend needs for a provisioner.
func (v *validator) replicationClass(ctx context.Context, m *managedCluster, p *v1alpha1.DRPolicy, backend v1alpha1.ReplicationBackend,
	provisioner string) (Result, string) {
	kind, gv, field, sel := "VolumeReplicationClass", volRepGV, "provisioner", p.Spec.ReplicationClassSelector
	if backend == v1alpha1.BackendVolSync {
		kind, gv, field, sel = "VolumeSnapshotClass", snapshotGV, "driver", p.Spec.VolumeSnapshotClassSelector
	}
	selector := labels.Everything()
	if sel != nil {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return Fail, fmt.Sprintf("the policy's selector of %ses is invalid: %v", kind, err)
		}
		selector = s
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gv.WithKind(kind + "List"))
	err := m.cl.List(ctx, list, client.MatchingLabelsSelector{Selector: selector})
	switch {
	case apierrors.IsForbidden(err):
		return Warn, fmt.Sprintf("provisioner %s; %s", provisioner, m.forbidden("list "+kind+"es"))
	case err != nil:
		return Fail, fmt.Sprintf("failed to list %ses: %v", kind, err)
	}
	for _, c := range list.Items {
		var got string
		if backend == v1alpha1.BackendVolSync {
			got, _, _ = unstructured.NestedString(c.Object, field)
		} else {
			got, _, _ = unstructured.NestedString(c.Object, "spec", field)
		}
		if got == provisioner {
			return Pass, fmt.Sprintf("provisioner %s, %s %s", provisioner, kind, c.GetName())
		}
	}
	return Fail, fmt.Sprintf("no %s of provisioner %s that the policy selects: %s cannot replicate these PVCs on %s; create one",
		kind, provisioner, backend, m.name)
}

// storeChecks checks each S3 profile of the policies as far as the CLI can: it holds no S3
// credential, so it never reaches a store itself. It checks that the profile's Secret exists on
// each cluster of the policies defining it (the agents read it there), with the keys the agents
// need, and reads the agents' reports: the ClusterDataProtected condition of the groups there,
// which says whether their last pass wrote the metadata to every store.
func (v *validator) storeChecks(ctx context.Context, policies []v1alpha1.DRPolicy, clusters []*managedCluster) {
	profiles := map[string]v1alpha1.S3Profile{}
	users := map[string]map[string]bool{}
	for _, p := range policies {
		for _, prof := range p.Spec.S3Profiles {
			profiles[prof.Name] = prof
			if users[prof.Name] == nil {
				users[prof.Name] = map[string]bool{}
			}
			for _, c := range p.Spec.DRClusters {
				users[prof.Name][c] = true
			}
		}
	}
	reports := groupReports(ctx, clusters)
	names := make([]string, 0, len(profiles))
	for n := range profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v.storeCheck(ctx, profiles[n], users[n], clusters, reports)
	}
}

// storeCheck checks one S3 profile.
func (v *validator) storeCheck(ctx context.Context, prof v1alpha1.S3Profile, users map[string]bool, clusters []*managedCluster,
	reports []groupReport) {
	check := "S3 profile " + prof.Name
	var failed, warned, present []string
	for _, m := range clusters {
		if !users[m.name] || !m.usable() {
			continue
		}
		r, msg := secretKeys(ctx, m, prof.SecretRef)
		switch r {
		case Fail:
			failed = append(failed, msg)
		case Warn:
			warned = append(warned, msg)
		default:
			present = append(present, m.name)
		}
	}
	ok := 0
	for _, g := range reports {
		switch {
		case g.status == metav1.ConditionTrue:
			ok++
		case g.status == metav1.ConditionFalse && (strings.Contains(g.message, prof.Name) || !mentionsAny(g.message, users)):
			failed = append(failed, fmt.Sprintf("group %s on %s: ClusterDataProtected False (%s): %s", g.key, g.cluster, g.reason, g.message))
		}
	}
	basis := fmt.Sprintf("%s at %s, bucket %s; the CLI holds no S3 credential and judges from the profile's Secret and the agents' reports",
		prof.Name, prof.Endpoint, prof.Bucket)
	switch {
	case len(failed) > 0:
		v.add(check, Fail, "%s (%s)", strings.Join(failed, "; "), basis)
	case ok == 0:
		v.add(check, Warn, "%s; no group reports writing to the stores yet (%s)", strings.Join(append(warned, secretLine(present, prof)), "; "), basis)
	case len(warned) > 0:
		v.add(check, Warn, "%s; %d group(s) report their metadata in every store (%s)", strings.Join(warned, "; "), ok, basis)
	default:
		v.add(check, Pass, "%s; %d group(s) report their metadata in every store (ClusterDataProtected) (%s)", secretLine(present, prof), ok, basis)
	}
}

func mentionsAny(msg string, words map[string]bool) bool {
	for w := range words {
		if strings.Contains(msg, w) {
			return true
		}
	}
	return false
}

func secretLine(present []string, prof v1alpha1.S3Profile) string {
	if len(present) == 0 {
		return "its Secret was checked on no cluster"
	}
	return fmt.Sprintf("Secret %s/%s holds the keys on %s", prof.SecretRef.Namespace, prof.SecretRef.Name, strings.Join(present, ", "))
}

// secretKeys checks that a profile's Secret exists on a cluster with the credential's keys. It
// reads the Secret and looks at its key names only.
func secretKeys(ctx context.Context, m *managedCluster, ref v1alpha1.SecretRef) (Result, string) {
	s := &corev1.Secret{}
	err := m.cl.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, s)
	switch {
	case apierrors.IsNotFound(err):
		return Fail, fmt.Sprintf("no Secret %s/%s on %s: the agent there cannot reach the store", ref.Namespace, ref.Name, m.name)
	case apierrors.IsForbidden(err):
		return Warn, m.forbidden(fmt.Sprintf("read Secret %s/%s", ref.Namespace, ref.Name))
	case err != nil:
		return Warn, fmt.Sprintf("failed to read Secret %s/%s on %s: %v", ref.Namespace, ref.Name, m.name, err)
	}
	var missing []string
	for _, k := range []string{objectstore.SecretAccessKeyIDKey, objectstore.SecretSecretAccessKeyKey} {
		if len(s.Data[k]) == 0 {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return Fail, fmt.Sprintf("Secret %s/%s on %s lacks %s", ref.Namespace, ref.Name, m.name, strings.Join(missing, ", "))
	}
	return Pass, ""
}

// groupReport is the ClusterDataProtected condition of one primary group.
type groupReport struct {
	cluster, key    string
	status          metav1.ConditionStatus
	reason, message string
}

// groupReports reads the ClusterDataProtected condition of every group on the clusters reached.
func groupReports(ctx context.Context, clusters []*managedCluster) []groupReport {
	var out []groupReport
	for _, m := range clusters {
		if !m.usable() {
			continue
		}
		list := &v1alpha1.VolumeReplicationGroupList{}
		if err := m.cl.List(ctx, list); err != nil {
			continue
		}
		for _, g := range list.Items {
			c := apimeta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionClusterDataProtected)
			if c == nil || g.Spec.ReplicationState != v1alpha1.ReplicationStatePrimary {
				continue
			}
			out = append(out, groupReport{cluster: m.name, key: g.Namespace + "/" + g.Name, status: c.Status, reason: c.Reason, message: c.Message})
		}
	}
	return out
}
