package kubeobjects_test

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/kubeobjects"
)

// object builds an unstructured object from a typed one.
func object(t *testing.T, obj runtime.Object, gvk schema.GroupVersionKind) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	return u
}

var (
	gvkConfigMap = corev1.SchemeGroupVersion.WithKind("ConfigMap")
	gvkSecret    = corev1.SchemeGroupVersion.WithKind("Secret")
	gvkSA        = corev1.SchemeGroupVersion.WithKind("ServiceAccount")
	gvkService   = corev1.SchemeGroupVersion.WithKind("Service")
	gvkNamespace = corev1.SchemeGroupVersion.WithKind("Namespace")
	gvkSTS       = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	gvkReplica   = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	gvkJob       = batchv1.SchemeGroupVersion.WithKind("Job")
	gvkWidget    = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
)

func meta1(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }

func TestNewSelectionChoosesKindsInRestoreOrder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		spec    v1alpha1.KubeObjectProtectionSpec
		want    []string
		wantErr string
	}{
		{
			name: "an empty spec captures the default kinds, workloads last",
			spec: v1alpha1.KubeObjectProtectionSpec{},
			want: []string{"ConfigMap", "Secret", "ServiceAccount", "Role.rbac.authorization.k8s.io", "RoleBinding.rbac.authorization.k8s.io",
				"Service", "HorizontalPodAutoscaler.autoscaling", "Ingress.networking.k8s.io", "NetworkPolicy.networking.k8s.io",
				"PodDisruptionBudget.policy", "DaemonSet.apps", "Deployment.apps", "StatefulSet.apps", "CronJob.batch", "Job.batch"},
		},
		{
			name: "excluded kinds are left out of the defaults",
			spec: v1alpha1.KubeObjectProtectionSpec{ExcludedKinds: []string{"Secret", "Ingress.networking.k8s.io", "DaemonSet.apps", "Job.batch", "CronJob.batch",
				"HorizontalPodAutoscaler.autoscaling", "NetworkPolicy.networking.k8s.io", "PodDisruptionBudget.policy",
				"Role.rbac.authorization.k8s.io", "RoleBinding.rbac.authorization.k8s.io"}},
			want: []string{"ConfigMap", "ServiceAccount", "Service", "Deployment.apps", "StatefulSet.apps"},
		},
		{
			name: "included kinds replace the defaults, custom resources after the built-in kinds and before workloads",
			spec: v1alpha1.KubeObjectProtectionSpec{IncludedKinds: []string{"StatefulSet.apps", "Widget.example.com", "ConfigMap", "Service"}},
			want: []string{"ConfigMap", "Service", "Widget.example.com", "StatefulSet.apps"},
		},
		{
			name:    "a PVC named in includedKinds is refused: the volume path owns PVCs",
			spec:    v1alpha1.KubeObjectProtectionSpec{IncludedKinds: []string{"ConfigMap", "PersistentVolumeClaim"}},
			wantErr: "includedKinds names PersistentVolumeClaim, which drover never captures",
		},
		{
			name:    "drover's own kinds are refused",
			spec:    v1alpha1.KubeObjectProtectionSpec{IncludedKinds: []string{"VolumeReplicationGroup.drover.io"}},
			wantErr: "names VolumeReplicationGroup.drover.io, which drover never captures",
		},
		{
			name:    "pods and replica sets are refused",
			spec:    v1alpha1.KubeObjectProtectionSpec{IncludedKinds: []string{"Pod", "ReplicaSet.apps"}},
			wantErr: "names ReplicaSet.apps",
		},
		{
			name: "an invalid object selector is refused",
			spec: v1alpha1.KubeObjectProtectionSpec{ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: "Near"}}}},
			wantErr: "objectSelector is invalid",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			sel, err := kubeobjects.NewSelection(&tc.spec)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			var got []string
			for _, gk := range sel.Kinds {
				got = append(got, kubeobjects.KindString(gk))
			}
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestWorkloadsAreTheSelectedKindsThatRunPods(t *testing.T) {
	g := NewWithT(t)
	sel, err := kubeobjects.NewSelection(&v1alpha1.KubeObjectProtectionSpec{
		IncludedKinds:  []string{"ConfigMap", "StatefulSet.apps", "Widget.example.com", "CronJob.batch"},
		ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	w := sel.Workloads()
	g.Expect(w.Kinds).To(Equal([]schema.GroupKind{kubeobjects.KindSTS, kubeobjects.KindCronJob}))
	g.Expect(w.Selector.String()).To(Equal("app=db"))
}

func TestSkipLeavesOutWhatControllersAndKubernetesCreate(t *testing.T) {
	owned := object(t, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web-1",
		OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "web", Controller: ptr.To(true)}}}}, gvkReplica)
	notController := object(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "conf",
		OwnerReferences: []metav1.OwnerReference{{Kind: "Widget", Name: "w"}}}}, gvkConfigMap)
	deleting := object(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "old",
		DeletionTimestamp: ptr.To(metav1.Now()), Finalizers: []string{"x"}}}, gvkConfigMap)
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		skip bool
	}{
		{"an object with a controller owner is skipped", owned, true},
		{"an object with an owner that is not its controller is kept", notController, false},
		{"an object being deleted is skipped", deleting, true},
		{"the default ServiceAccount is skipped", object(t, &corev1.ServiceAccount{ObjectMeta: meta1("app", "default")}, gvkSA), true},
		{"another ServiceAccount is kept", object(t, &corev1.ServiceAccount{ObjectMeta: meta1("app", "db")}, gvkSA), false},
		{"the root CA ConfigMap is skipped", object(t, &corev1.ConfigMap{ObjectMeta: meta1("app", "kube-root-ca.crt")}, gvkConfigMap), true},
		{"a service account token Secret is skipped", object(t, &corev1.Secret{ObjectMeta: meta1("app", "db-token"),
			Type: corev1.SecretTypeServiceAccountToken}, gvkSecret), true},
		{"an opaque Secret is kept", object(t, &corev1.Secret{ObjectMeta: meta1("app", "creds"), Type: corev1.SecretTypeOpaque}, gvkSecret), false},
		{"a drover hook's Job is skipped", object(t, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "hook-migrate-0123456789",
			Labels: map[string]string{kubeobjects.LabelHook: "migrate"}}}, gvkJob), true},
		{"the application's own Job is kept", object(t, &batchv1.Job{ObjectMeta: meta1("app", "migrate")}, gvkJob), false},
		{"a StatefulSet with the hook label is kept", object(t, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db",
			Labels: map[string]string{kubeobjects.LabelHook: "x"}}}, gvkSTS), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, skip := kubeobjects.Skip(tc.obj)
			NewWithT(t).Expect(skip).To(Equal(tc.skip), reason)
		})
	}
}

func TestCleanKeepsOnlyWhatAnotherClusterCanUse(t *testing.T) {
	clusterMeta := metav1.ObjectMeta{
		Namespace: "app", Name: "x", UID: "u-1", ResourceVersion: "42", Generation: 3,
		CreationTimestamp: metav1.Now(), Finalizers: []string{"example.com/f"},
		ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		OwnerReferences: []metav1.OwnerReference{{Kind: "Widget", Name: "w", UID: "u-2"}},
		Labels:          map[string]string{"app": "db", "drover.io/fenced": "true"},
		Annotations:     map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"},
	}
	for _, tc := range []struct {
		name  string
		obj   *unstructured.Unstructured
		check func(g Gomega, got *unstructured.Unstructured)
	}{
		{
			name: "metadata of this cluster, status and the fence label go; labels and annotations stay",
			obj: object(t, &appsv1.StatefulSet{ObjectMeta: clusterMeta, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)},
				Status: appsv1.StatefulSetStatus{Replicas: 3}}, gvkSTS),
			check: func(g Gomega, got *unstructured.Unstructured) {
				g.Expect(got.Object["metadata"]).To(Equal(map[string]any{
					"namespace": "app", "name": "x", "labels": map[string]any{"app": "db"},
					"annotations": map[string]any{"kubectl.kubernetes.io/last-applied-configuration": "{}"},
				}))
				g.Expect(got.Object).NotTo(HaveKey("status"))
				replicas, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas")
				g.Expect(replicas).To(Equal(int64(3)))
			},
		},
		{
			name: "a Service loses its allocated cluster IPs and node ports",
			obj: object(t, &corev1.Service{ObjectMeta: meta1("app", "web"), Spec: corev1.ServiceSpec{
				Type: corev1.ServiceTypeNodePort, ClusterIP: "10.0.0.7", ClusterIPs: []string{"10.0.0.7"},
				IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
				Ports:      []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080}},
			}}, gvkService),
			check: func(g Gomega, got *unstructured.Unstructured) {
				spec := got.Object["spec"].(map[string]any)
				g.Expect(spec).NotTo(HaveKey("clusterIP"))
				g.Expect(spec).NotTo(HaveKey("clusterIPs"))
				g.Expect(spec).NotTo(HaveKey("ipFamilies"))
				g.Expect(spec["ports"]).To(Equal([]any{map[string]any{"name": "http", "port": int64(80), "targetPort": int64(0)}}))
				g.Expect(spec["type"]).To(Equal("NodePort"))
			},
		},
		{
			name: "a headless Service stays headless",
			obj: object(t, &corev1.Service{ObjectMeta: meta1("app", "db"), Spec: corev1.ServiceSpec{
				ClusterIP: "None", ClusterIPs: []string{"None"}}}, gvkService),
			check: func(g Gomega, got *unstructured.Unstructured) {
				ip, _, _ := unstructured.NestedString(got.Object, "spec", "clusterIP")
				g.Expect(ip).To(Equal("None"))
			},
		},
		{
			name: "a Job loses its generated selector and the template labels naming its uid",
			obj: object(t, &batchv1.Job{ObjectMeta: meta1("app", "migrate"), Spec: batchv1.JobSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "u-1"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
					"batch.kubernetes.io/controller-uid": "u-1", "controller-uid": "u-1", "job-name": "migrate",
					"batch.kubernetes.io/job-name": "migrate", "app": "db"}}},
			}}, gvkJob),
			check: func(g Gomega, got *unstructured.Unstructured) {
				g.Expect(got.Object["spec"]).NotTo(HaveKey("selector"))
				l, _, _ := unstructured.NestedStringMap(got.Object, "spec", "template", "metadata", "labels")
				g.Expect(l).To(Equal(map[string]string{"app": "db"}))
			},
		},
		{
			name: "a Job with a manual selector keeps it",
			obj: object(t, &batchv1.Job{ObjectMeta: meta1("app", "migrate"), Spec: batchv1.JobSpec{
				ManualSelector: ptr.To(true),
				Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			}}, gvkJob),
			check: func(g Gomega, got *unstructured.Unstructured) {
				g.Expect(got.Object["spec"]).To(HaveKey("selector"))
			},
		},
		{
			name: "a Namespace loses its finalizers spec and the name label",
			obj: object(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app",
				Labels: map[string]string{"kubernetes.io/metadata.name": "app", "pod-security.kubernetes.io/enforce": "baseline"}},
				Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}}}, gvkNamespace),
			check: func(g Gomega, got *unstructured.Unstructured) {
				g.Expect(got.Object).NotTo(HaveKey("spec"))
				g.Expect(got.GetLabels()).To(Equal(map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}))
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			before := tc.obj.DeepCopy()
			got := kubeobjects.Clean(tc.obj)
			tc.check(g, got)
			g.Expect(tc.obj).To(Equal(before), "Clean does not change its argument")
		})
	}
}

func TestOrderPutsNamespacesFirstAndWorkloadsLast(t *testing.T) {
	g := NewWithT(t)
	objs := []*unstructured.Unstructured{
		object(t, &appsv1.StatefulSet{ObjectMeta: meta1("app", "db")}, gvkSTS),
		object(t, &batchv1.Job{ObjectMeta: meta1("app", "a-job")}, gvkJob),
		object(t, &corev1.Service{ObjectMeta: meta1("app", "db")}, gvkService),
		{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"namespace": "app", "name": "w"}}},
		object(t, &corev1.Secret{ObjectMeta: meta1("app", "creds")}, gvkSecret),
		object(t, &corev1.ConfigMap{ObjectMeta: meta1("app", "conf")}, gvkConfigMap),
		object(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, gvkNamespace),
	}
	kubeobjects.Order(objs)
	var got []string
	for _, o := range objs {
		got = append(got, kubeobjects.Key(o))
	}
	g.Expect(got).To(Equal([]string{
		"Namespace app", "ConfigMap app/conf", "Secret app/creds", "Service app/db", "Widget.example.com app/w",
		"StatefulSet.apps app/db", "Job.batch app/a-job",
	}))
}

func TestResolveSkipsKindsNotServedAndRefusesClusterScopedOnes(t *testing.T) {
	g := NewWithT(t)
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{corev1.SchemeGroupVersion, appsv1.SchemeGroupVersion, gvkWidget.GroupVersion()})
	mapper.Add(gvkConfigMap, meta.RESTScopeNamespace)
	mapper.Add(gvkSTS, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}, meta.RESTScopeRoot)
	sel, err := kubeobjects.NewSelection(&v1alpha1.KubeObjectProtectionSpec{IncludedKinds: []string{"ConfigMap", "StatefulSet.apps", "Widget.example.com"}})
	g.Expect(err).NotTo(HaveOccurred())
	resources, notServed, err := sel.Resolve(mapper)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resources).To(Equal([]kubeobjects.Resource{{GVK: gvkConfigMap}, {GVK: gvkSTS}}))
	g.Expect(notServed).To(Equal([]string{"Widget.example.com"}))

	sel, err = kubeobjects.NewSelection(&v1alpha1.KubeObjectProtectionSpec{IncludedKinds: []string{"Gadget.example.com"}})
	g.Expect(err).NotTo(HaveOccurred())
	_, _, err = sel.Resolve(mapper)
	g.Expect(err).To(MatchError(ContainSubstring("kind Gadget.example.com is cluster-scoped")))
}

func TestACaptureRoundTripsAndAnotherVersionIsRefused(t *testing.T) {
	g := NewWithT(t)
	c := &kubeobjects.Capture{
		Version: kubeobjects.FormatVersion, CapturedAt: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), Namespaces: []string{"app"},
		Objects: []*unstructured.Unstructured{
			object(t, &appsv1.StatefulSet{ObjectMeta: meta1("app", "db")}, gvkSTS),
			object(t, &corev1.ConfigMap{ObjectMeta: meta1("app", "conf"), Data: map[string]string{"k": "v"}}, gvkConfigMap),
		},
	}
	body, err := kubeobjects.Encode(c)
	g.Expect(err).NotTo(HaveOccurred())
	got, err := kubeobjects.Decode(body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.CapturedAt.Equal(&c.CapturedAt)).To(BeTrue())
	g.Expect(got.Objects).To(HaveLen(2))
	g.Expect(kubeobjects.Key(got.Objects[0])).To(Equal("ConfigMap app/conf"), "decoded in restore order")
	g.Expect(got.Objects[0].Object["data"]).To(Equal(map[string]any{"k": "v"}))
	g.Expect(kubeobjects.Summary(got.Objects)).To(Equal("1 ConfigMap, 1 StatefulSet.apps"))

	_, err = kubeobjects.Decode([]byte(`{"version":2,"objects":[]}`))
	g.Expect(err).To(MatchError(ContainSubstring("format version 2")))
	_, err = kubeobjects.Decode([]byte(`{"version":1,"objects":[{"kind":"ConfigMap","apiVersion":"v1","metadata":{}}]}`))
	g.Expect(err).To(MatchError(ContainSubstring("object 0 has no kind or name")))
	_, err = kubeobjects.Decode([]byte(`{"version":1,"namespaces":["app"],"objects":[{"kind":"ConfigMap","apiVersion":"v1","metadata":{"namespace":"kube-system","name":"x"}}]}`))
	g.Expect(err).To(MatchError(ContainSubstring("object 0 (ConfigMap kube-system/x) is outside its namespaces [app]")))
	_, err = kubeobjects.Decode([]byte(`{"version":1,"namespaces":["app"],"objects":[{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"other"}}]}`))
	g.Expect(err).To(MatchError(ContainSubstring("object 0 (Namespace other) is outside")))
}

// newFakeClient is a fake client with client-go's kinds, namespaced except Namespaces.
func newFakeClient(t *testing.T, objs ...client.Object) client.WithWatch {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mapper := meta.NewDefaultRESTMapper(scheme.PrioritizedVersionsAllGroups())
	for gvk := range scheme.AllKnownTypes() {
		scope := meta.RESTScopeNamespace
		if gvk.Kind == "Namespace" {
			scope = meta.RESTScopeRoot
		}
		mapper.Add(gvk, scope)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).WithObjects(objs...).Build()
}

func TestCollectCapturesTheSelectedObjectsCleanedAndInOrder(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newFakeClient(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app", Labels: map[string]string{"team": "a"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "conf", Labels: map[string]string{"app": "db"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "kube-root-ca.crt", Labels: map[string]string{"app": "db"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "other-app"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "conf", Labels: map[string]string{"app": "db"}}},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db", Labels: map[string]string{"app": "db"}, UID: "u-1"}},
		&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web-1", Labels: map[string]string{"app": "db"}}},
	)
	sel, err := kubeobjects.NewSelection(&v1alpha1.KubeObjectProtectionSpec{
		ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	resources, _, err := sel.Resolve(c.RESTMapper())
	g.Expect(err).NotTo(HaveOccurred())
	objs, err := kubeobjects.Collect(ctx, c, resources, []string{"app", "missing"}, sel)
	g.Expect(err).NotTo(HaveOccurred())
	var got []string
	for _, o := range objs {
		got = append(got, kubeobjects.Key(o))
		g.Expect(o.GetResourceVersion()).To(BeEmpty(), "%s is cleaned", kubeobjects.Key(o))
		g.Expect(string(o.GetUID())).To(BeEmpty())
	}
	g.Expect(got).To(Equal([]string{"Namespace app", "ConfigMap app/conf", "StatefulSet.apps app/db"}),
		"the namespace, then the selected objects of default kinds: no root CA, no other app's, no ReplicaSet, no other namespace")
	g.Expect(objs[0].GetLabels()).To(HaveKeyWithValue("team", "a"))
}

// The lists of a capture run concurrently: one that fails still fails the whole capture (never
// a partial one stored), and the others' results keep their order.
func TestACaptureWithOneListFailingFailsWhole(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	base := newFakeClient(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "conf", Labels: map[string]string{"app": "db"}}},
	)
	c := interceptor.NewClient(base, interceptor.Funcs{
		List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if u, ok := list.(*unstructured.UnstructuredList); ok && u.GetKind() == "SecretList" {
				return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New("refused by a test"))
			}
			return cl.List(ctx, list, opts...)
		},
	})
	sel, err := kubeobjects.NewSelection(&v1alpha1.KubeObjectProtectionSpec{
		ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	resources, _, err := sel.Resolve(base.RESTMapper())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(len(resources)).To(BeNumerically(">", 4), "more kinds than lists run at once")
	objs, err := kubeobjects.Collect(ctx, c, resources, []string{"app"}, sel)
	g.Expect(err).To(MatchError(ContainSubstring("failed to list Secret in namespace app")))
	g.Expect(objs).To(BeNil(), "no partial capture")

	objs, err = kubeobjects.Collect(ctx, base, resources, []string{"app"}, sel)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(2), "the namespace and the ConfigMap")
}

func TestRestoreCreatesWhatIsMissingAdoptsWhatExistsAndHoldsWorkloadsBackOnFailure(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	existing := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "conf"}, Data: map[string]string{"k": "here"}}
	c := newFakeClient(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app", Labels: map[string]string{"team": "mine"}}},
		existing)
	stored := []*unstructured.Unstructured{
		object(t, &appsv1.StatefulSet{ObjectMeta: meta1("app", "db")}, gvkSTS),
		object(t, &corev1.ConfigMap{ObjectMeta: meta1("app", "conf"), Data: map[string]string{"k": "stored"}}, gvkConfigMap),
		object(t, &corev1.Secret{ObjectMeta: meta1("app", "creds")}, gvkSecret),
		object(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app", Labels: map[string]string{"team": "stored", "tier": "db"}}}, gvkNamespace),
	}
	for _, o := range stored {
		o.Object = kubeobjects.Clean(o).Object
	}

	// The first attempt fails on the Secret (the namespace refuses it, as a webhook or a quota
	// might): the StatefulSet must not be created without it.
	secretFails := interceptSecretCreate(c)
	res, err := kubeobjects.Restore(ctx, secretFails, stored, "test")
	g.Expect(err).To(MatchError(ContainSubstring("failed to restore Secret app/creds")))
	g.Expect(res.Waiting).To(Equal(1), "the StatefulSet waits")
	g.Expect(apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: "app", Name: "db"}, &appsv1.StatefulSet{}))).To(BeTrue())

	res, err = kubeobjects.Restore(ctx, c, stored, "test")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(kubeobjects.RestoreResult{Created: 2, Adopted: 2}), "the Secret and StatefulSet created; the namespace and ConfigMap adopted")
	cm := &corev1.ConfigMap{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(existing), cm)).To(Succeed())
	g.Expect(cm.Data).To(Equal(map[string]string{"k": "here"}), "an existing object is never overwritten")
	ns := &corev1.Namespace{}
	g.Expect(c.Get(ctx, client.ObjectKey{Name: "app"}, ns)).To(Succeed())
	g.Expect(ns.Labels).To(Equal(map[string]string{"team": "mine", "tier": "db"}), "a namespace gains only the labels it lacks")
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "app", Name: "db"}, &appsv1.StatefulSet{})).To(Succeed())

	res, err = kubeobjects.Restore(ctx, c, stored, "test")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(kubeobjects.RestoreResult{Adopted: 4}), "a second restore creates nothing")
}

func TestDeleteWorkloadsDeletesTheSelectedWorkloadsAndNothingElse(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	db := map[string]string{"app": "db"}
	c := newFakeClient(t,
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db", Labels: db}},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "unselected"}},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "db", Labels: db}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "nightly-1", Labels: db,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: "nightly", UID: "u", Controller: ptr.To(true)}}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "conf", Labels: db}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data-db-0", Labels: db}},
	)
	sel, err := kubeobjects.NewSelection(&v1alpha1.KubeObjectProtectionSpec{ObjectSelector: &metav1.LabelSelector{MatchLabels: db}})
	g.Expect(err).NotTo(HaveOccurred())
	resources, _, err := sel.Workloads().Resolve(c.RESTMapper())
	g.Expect(err).NotTo(HaveOccurred())
	remaining, err := kubeobjects.DeleteWorkloads(ctx, c, resources, []string{"app"}, sel)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(remaining).To(Equal([]string{"StatefulSet.apps app/db"}), "deleted in this call")
	remaining, err = kubeobjects.DeleteWorkloads(ctx, c, resources, []string{"app"}, sel)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(remaining).To(BeEmpty())
	for _, kept := range []client.Object{
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "unselected"}},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "db"}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "nightly-1"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "conf"}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data-db-0"}},
	} {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(kept), kept)).To(Succeed(), "%T %s is kept", kept, kept.GetName())
	}
}

// interceptSecretCreate wraps a client so that creating a Secret is refused.
func interceptSecretCreate(c client.WithWatch) client.Client {
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if u, ok := obj.(*unstructured.Unstructured); ok && u.GetKind() == "Secret" {
				return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, obj.GetName(), errors.New("refused by a test"))
			}
			return cl.Create(ctx, obj, opts...)
		},
	})
}

// A restore raises its namespace to the stored Pod Security level (never lowering one already
// stricter) and creates no workload whose pods that level refuses, saying which and why; one a
// person created meanwhile is adopted.
func TestRestoreRaisesTheNamespacesLevelAndRefusesWorkloadsItWouldRefuse(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newFakeClient(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app", Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "privileged", "team": "mine"}}})
	root := &appsv1.Deployment{ObjectMeta: meta1("app", "root"), Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		HostPID: true, Containers: []corev1.Container{{Name: "c", Image: "x", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}}}}}
	captured := &kubeobjects.Capture{Version: kubeobjects.FormatVersion, Objects: []*unstructured.Unstructured{
		object(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app", Labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}}}, gvkNamespace),
		object(t, &corev1.ConfigMap{ObjectMeta: meta1("app", "conf")}, gvkConfigMap),
		object(t, root, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}),
	}}
	checked, err := kubeobjects.Check(captured, []string{"app"}, c.RESTMapper())
	g.Expect(err).NotTo(HaveOccurred())

	res, err := kubeobjects.Restore(ctx, c, checked.Objects, "test")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Refused).To(ConsistOf(And(HavePrefix("Deployment.apps app/root: "), ContainSubstring(`violates PodSecurity "baseline:latest"`),
		ContainSubstring("privileged"), ContainSubstring("host namespaces"))))
	g.Expect(res.Created).To(Equal(1), "the ConfigMap")
	g.Expect(apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: "app", Name: "root"}, &appsv1.Deployment{}))).To(BeTrue())
	ns := &corev1.Namespace{}
	g.Expect(c.Get(ctx, client.ObjectKey{Name: "app"}, ns)).To(Succeed())
	g.Expect(ns.Labels).To(Equal(map[string]string{"pod-security.kubernetes.io/enforce": "baseline",
		"pod-security.kubernetes.io/enforce-version": "latest", "team": "mine"}), "raised to the floor, the other labels kept")

	// A person creates the Deployment as the level admits it: the next restore adopts it.
	fixed := root.DeepCopy()
	fixed.Spec.Template.Spec = corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}
	g.Expect(c.Create(ctx, fixed)).To(Succeed())
	res, err = kubeobjects.Restore(ctx, c, checked.Objects, "test")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(kubeobjects.RestoreResult{Adopted: 3}))

	// A namespace enforcing restricted already keeps it, and judges the templates by it.
	strict := newFakeClient(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app", Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}})
	plain := object(t, fixed, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	plain.Object = kubeobjects.Clean(plain).Object
	res, err = kubeobjects.Restore(ctx, strict, []*unstructured.Unstructured{checked.Objects[0], plain}, "test")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Refused).To(ConsistOf(ContainSubstring(`violates PodSecurity "restricted:latest"`)))
	g.Expect(strict.Get(ctx, client.ObjectKey{Name: "app"}, ns)).To(Succeed())
	g.Expect(ns.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"), "never lowered")
}
