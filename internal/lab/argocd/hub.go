package argocd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/drover-io/drover/internal/kubeconfig"
)

// Names on the hub that Argo CD and drover agree on.
const (
	// Namespace is Argo CD's namespace: its settings, cluster Secrets and ApplicationSets, and
	// the PlacementDecisions its generator reads.
	Namespace = "argocd"
	// DecisionConfigMap tells the clusterDecisionResource generator how to read OCM
	// PlacementDecisions (OCM documents this name).
	DecisionConfigMap = "ocm-placement-generator"
	// Project is the AppProject the lab's Applications belong to.
	Project = "default"

	clusterSecretTypeLabel = "argocd.argoproj.io/secret-type" //nolint:gosec // a label name, not a credential
	partOfLabel            = "app.kubernetes.io/part-of"
	fieldOwner             = "drover-lab-argocd"
)

// crdFiles are Argo CD's CRDs as build-tools copies them from its module into bin/argocd-crds.
var crdFiles = []string{"application-crd.yaml", "applicationset-crd.yaml", "appproject-crd.yaml"}

// ClusterAccess is how Argo CD reaches one managed cluster.
type ClusterAccess struct {
	// Server is the API server's URL.
	Server string
	// CAData, CertData and KeyData are PEM: the server's CA and a client certificate and key.
	CAData, CertData, KeyData []byte
	// BearerToken authenticates instead of a client certificate when set.
	BearerToken string
}

// AccessFromKubeconfig reads a ClusterAccess from the current context of a kubeconfig file,
// with referenced certificate files inlined.
func AccessFromKubeconfig(path string) (ClusterAccess, error) {
	cfg, err := kubeconfig.FromFile(path)
	if err != nil {
		return ClusterAccess{}, fmt.Errorf("failed to read kubeconfig %s: %w", path, err)
	}
	if err := rest.LoadTLSFiles(cfg); err != nil {
		return ClusterAccess{}, fmt.Errorf("failed to read the certificates of kubeconfig %s: %w", path, err)
	}
	return ClusterAccess{
		Server: cfg.Host, CAData: cfg.CAData, CertData: cfg.CertData, KeyData: cfg.KeyData, BearerToken: cfg.BearerToken,
	}, nil
}

// clusterConfig is the `config` of an Argo CD cluster Secret (its ClusterConfig type).
type clusterConfig struct {
	BearerToken     string          `json:"bearerToken,omitempty"`
	TLSClientConfig tlsClientConfig `json:"tlsClientConfig"`
}

type tlsClientConfig struct {
	Insecure bool   `json:"insecure"`
	CAData   []byte `json:"caData,omitempty"`
	CertData []byte `json:"certData,omitempty"`
	KeyData  []byte `json:"keyData,omitempty"`
}

// clusterSecret is the Argo CD cluster Secret of one managed cluster. Its name and its `name`
// are the cluster's name: what the generator matches a decision's clusterName against.
func clusterSecret(name string, access ClusterAccess) (*corev1.Secret, error) {
	// The credentials go into the cluster Secret: that is where Argo CD reads them.
	cfg, err := json.Marshal(clusterConfig{ //nolint:gosec // G117: a Secret's content by design
		BearerToken:     access.BearerToken,
		TLSClientConfig: tlsClientConfig{CAData: access.CAData, CertData: access.CertData, KeyData: access.KeyData},
	})
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: map[string]string{
			clusterSecretTypeLabel: "cluster", partOfLabel: "argocd",
		}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"name": []byte(name), "server": []byte(access.Server), "config": cfg},
	}, nil
}

// baseObjects are Argo CD's settings on the hub: no in-cluster destination (the hub runs no
// applications), a server secret key, the default project open to every repository and
// destination, and the generator's ConfigMap for OCM PlacementDecisions.
func baseObjects() ([]client.Object, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	argo := map[string]string{partOfLabel: "argocd"}
	project := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"name": Project, "namespace": Namespace},
		"spec": map[string]any{
			"sourceRepos":              []any{"*"},
			"destinations":             []any{map[string]any{"server": "*", "name": "*", "namespace": "*"}},
			"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}},
		},
	}}
	return []client.Object{
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: Namespace}},
		&corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "argocd-cm", Namespace: Namespace, Labels: argo},
			Data:       map[string]string{"cluster.inClusterEnabled": "false"},
		},
		&corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: "argocd-secret", Namespace: Namespace, Labels: argo},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{"server.secretkey": []byte(hex.EncodeToString(key))},
		},
		project,
		&corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: DecisionConfigMap, Namespace: Namespace},
			Data: map[string]string{
				"apiVersion":    "cluster.open-cluster-management.io/v1beta1",
				"kind":          "placementdecisions",
				"statusListKey": "decisions",
				"matchKey":      "clusterName",
			},
		},
	}, nil
}

// installOnHub applies Argo CD's CRDs, settings and cluster Secrets on the hub. The server
// secret key is created once and kept.
func installOnHub(ctx context.Context, cl client.Client, crdDir string, clusters map[string]ClusterAccess) error {
	if err := installCRDs(ctx, cl, crdDir); err != nil {
		return err
	}
	objs, err := baseObjects()
	if err != nil {
		return err
	}
	names := make([]string, 0, len(clusters))
	for name := range clusters {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		s, err := clusterSecret(name, clusters[name])
		if err != nil {
			return err
		}
		objs = append(objs, s)
	}
	for _, obj := range objs {
		if obj.GetName() == "argocd-secret" {
			if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), &corev1.Secret{}); err == nil {
				continue
			}
		}
		if err := apply(ctx, cl, obj); err != nil {
			return err
		}
	}
	return nil
}

// crdEstablishTimeout bounds the wait for the API server to serve Argo CD's CRDs.
const crdEstablishTimeout = 30 * time.Second

func installCRDs(ctx context.Context, cl client.Client, dir string) error {
	names := make([]string, 0, len(crdFiles))
	for _, f := range crdFiles {
		raw, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return fmt.Errorf("failed to read Argo CD's CRD %s (run `make tools-argocd`): %w", f, err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(raw, crd); err != nil {
			return fmt.Errorf("failed to decode CRD %s: %w", f, err)
		}
		crd.TypeMeta = metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"}
		if err := apply(ctx, cl, crd); err != nil {
			return err
		}
		names = append(names, crd.Name)
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, crdEstablishTimeout, true, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := cl.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return false, nil //nolint:nilerr // not yet visible; poll again
			}
			if !slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
				return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
			}) {
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
