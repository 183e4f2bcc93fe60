package join

import (
	"fmt"
	"maps"
	"os"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/config/rbac"
	"github.com/drover-io/drover/internal/objectstore"
)

// labels are the labels of everything join creates for cluster.
func labels(cluster string) map[string]string {
	return map[string]string{LabelManagedBy: ManagedByValue, LabelCluster: cluster}
}

// toUnstructured converts a typed object that carries its TypeMeta, dropping what is not ours
// to set (an empty status, a null creationTimestamp).
func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("failed to convert %T: %w", obj, err)
	}
	u := &unstructured.Unstructured{Object: raw}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}
}

// managedObjects are what join applies on the managed cluster, in order: the hub's
// ServiceAccount and the Secret its tokens are bound to, the agent's ConfigMap naming the cluster, the hub's role
// bound to it, the S3 credentials.
func (o Options) managedObjects() ([]*unstructured.Unstructured, error) {
	sa := &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: ServiceAccountName, Labels: labels(o.Name)},
	}
	// The Secret the hub's tokens are bound to (token.go): it holds nothing; deleting it, or
	// the ServiceAccount, revokes every token issued for the hub.
	token := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: o.Namespace, Name: TokenSecretName, Labels: labels(o.Name),
			Annotations: map[string]string{AnnotationBinds: "the tokens of ServiceAccount " + ServiceAccountName + ": deleting this Secret revokes them"},
		},
		Type: corev1.SecretTypeOpaque,
	}
	// The agent of the release manifests reads its cluster's name (the DRCluster's) from here.
	agentConfig := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: AgentConfigMapName, Labels: labels(o.Name)},
		Data:       map[string]string{AgentClusterNameKey: o.Name},
	}
	var out []*unstructured.Unstructured
	for _, obj := range []runtime.Object{sa, token, agentConfig} {
		u, err := toUnstructured(obj)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	roles, err := o.hubRole()
	if err != nil {
		return nil, err
	}
	out = append(out, roles...)
	s3, err := toUnstructured(s3Secret(o.S3, o.Name))
	if err != nil {
		return nil, err
	}
	return append(out, s3), nil
}

// hubRole returns the manifests of config/rbac/hub-on-managed-cluster, labelled, with every
// binding's subjects replaced by the ServiceAccount: the manifests bind the user of a client
// certificate, join's identity is a ServiceAccount.
func (o Options) hubRole() ([]*unstructured.Unstructured, error) {
	docs, err := rbac.Manifests(rbac.HubOnManagedCluster, rbac.HubOnManagedClusterDir)
	if err != nil {
		return nil, err
	}
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: o.Namespace, Name: ServiceAccountName}
	out := make([]*unstructured.Unstructured, 0, len(docs))
	for _, doc := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, fmt.Errorf("failed to decode the hub's role on a managed cluster: %w", err)
		}
		if u.GetKind() == "ClusterRoleBinding" || u.GetKind() == "RoleBinding" {
			subj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&subject)
			if err != nil {
				return nil, fmt.Errorf("failed to convert the ServiceAccount subject: %w", err)
			}
			if err := unstructured.SetNestedSlice(u.Object, []any{subj}, "subjects"); err != nil {
				return nil, fmt.Errorf("failed to bind %s to the ServiceAccount: %w", u.GetName(), err)
			}
		}
		if u.GetNamespace() != "" {
			u.SetNamespace(o.Namespace) // the Role that lets the hub renew its token
		}
		u.SetLabels(mergeLabels(u.GetLabels(), labels(o.Name)))
		out = append(out, u)
	}
	return out, nil
}

func mergeLabels(base, more map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// s3Secret is the credentials Secret of profile p, labelled for cluster. It carries the
// profile's endpoint, bucket and region too, so the Secret alone describes the profile
// (objectstore.ProfileFromSecret reads it whole).
func s3Secret(p objectstore.Profile, cluster string) *corev1.Secret {
	data := map[string][]byte{
		objectstore.SecretAccessKeyIDKey:     []byte(p.AccessKeyID),
		objectstore.SecretSecretAccessKeyKey: []byte(p.SecretAccessKey),
		objectstore.SecretEndpointKey:        []byte(p.Endpoint),
		objectstore.SecretBucketKey:          []byte(p.Bucket),
	}
	if p.Region != "" {
		data[objectstore.SecretRegionKey] = []byte(p.Region)
	}
	if p.Insecure {
		data[objectstore.SecretInsecureKey] = []byte("true")
	}
	maps.Copy(data, p.Keys.SecretData())
	l := labels(cluster)
	l[LabelS3Profile] = p.Name
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: p.SecretNamespace, Name: p.SecretName, Labels: l},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}

// hubObjects are what join applies on the hub: the kubeconfig Secret, the copy of the S3
// profile's Secret that later joins read (see profiles.go; the hub itself never reads it) and
// the DRCluster.
func (o Options) hubObjects(kubeconfig []byte) ([]*unstructured.Unstructured, error) {
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: KubeconfigSecretName(o.Name), Labels: labels(o.Name)},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{v1alpha1.KubeconfigSecretKey: kubeconfig},
	}
	drc := &v1alpha1.DRCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "DRCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Labels: labels(o.Name)},
		Spec: v1alpha1.DRClusterSpec{
			KubeconfigSecretRef: v1alpha1.SecretRef{Namespace: o.Namespace, Name: KubeconfigSecretName(o.Name)},
			S3ProfileName:       o.S3.Name,
			Region:              o.Region,
		},
	}
	var out []*unstructured.Unstructured
	for _, obj := range []runtime.Object{secret, s3Secret(o.S3, o.Name), drc} {
		u, err := toUnstructured(obj)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

// hubKubeconfig is the kubeconfig the hub uses for the managed cluster: o.Server, the CA ca
// and the ServiceAccount's token. It never skips TLS verification, even when the managed
// cluster's kubeconfig does (AllowInsecureKubeconfig): the hub refuses such a kubeconfig
// (gateway.CheckKubeconfig).
func (o Options) hubKubeconfig(token, ca []byte) ([]byte, error) {
	cfg := o.Managed.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters[o.Name] = &clientcmdapi.Cluster{Server: o.Server, CertificateAuthorityData: ca, TLSServerName: cfg.ServerName}
	kc.AuthInfos[ServiceAccountName] = &clientcmdapi.AuthInfo{Token: string(token)}
	kc.Contexts[o.Name] = &clientcmdapi.Context{Cluster: o.Name, AuthInfo: ServiceAccountName}
	kc.CurrentContext = o.Name
	raw, err := clientcmd.Write(*kc)
	if err != nil {
		return nil, fmt.Errorf("failed to write the hub's kubeconfig for %s: %w", o.Name, err)
	}
	return raw, nil
}

// configCA is the CA that cfg trusts, nil when it names none.
func configCA(cfg *rest.Config) ([]byte, error) {
	if len(cfg.CAData) > 0 || cfg.CAFile == "" {
		return cfg.CAData, nil
	}
	ca, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("failed to read the CA file %s of the managed cluster's kubeconfig: %w", cfg.CAFile, err)
	}
	return ca, nil
}

func metav1TypeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

func objectMeta(ns, name string, l map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l}
}
