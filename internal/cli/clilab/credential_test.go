package clilab

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/config/rbac"
	"github.com/drover-io/drover/internal/cli/day2"
	"github.com/drover-io/drover/internal/lab"
)

// TestTheHubsCredentialMakesTheChecksItMayNotMakeWarnings gives DRCluster east the credential
// drover's hub has there (the user drover-hub bound to config/rbac/hub-on-managed-cluster),
// which may not list StorageClasses, Deployments or PVCs: validate must say so in warnings that
// name --cluster-kubeconfig, not fail nor pass them, and pass them with an administrator's
// kubeconfig given by that flag; gather must list what it could not collect in its README.
func TestTheHubsCredentialMakesTheChecksItMayNotMakeWarnings(t *testing.T) {
	useHubCredential(t, lab.East)

	got, out, err := rows(t, validateClusters(t), day2.ValidateOptions{})
	if err != nil {
		t.Errorf("validate clusters returned %v:\n%s", err, out)
	}
	expect(t, got, out, map[string]day2.Result{
		"east: credential": day2.Pass, "east: API server": day2.Pass, "east: CRDs drover.io/v1alpha1": day2.Pass,
		"east: StorageClass lab-block (VolRep, day2)": day2.Warn,
		"east: drover-agent":                          day2.Warn,
		// The hub's credential may not read the profile's Secret on east (nor any Secret).
		"S3 profile s3-east": day2.Warn,
	})
	if d := got["east: StorageClass lab-block (VolRep, day2)"].Detail; !strings.Contains(d, "may not list StorageClasses on east") ||
		!strings.Contains(d, "--cluster-kubeconfig east=FILE") {
		t.Errorf("the storage check says %q, want what the credential may not do and the flag", d)
	}
	if d := got["S3 profile s3-east"].Detail; !strings.Contains(d, "may not read Secret drover-system/s3-east on east") ||
		!strings.Contains(d, "--cluster-kubeconfig east=FILE") {
		t.Errorf("the S3 profile check says %q, want what the credential may not do and the flag", d)
	}

	east, err := testLab.Cluster(lab.East)
	if err != nil {
		t.Fatal(err)
	}
	got, out, _ = rows(t, validateClusters(t), day2.ValidateOptions{Kubeconfigs: day2.ClusterKubeconfigs{lab.East: east.KubeconfigPath()}})
	expect(t, got, out, map[string]day2.Result{"east: StorageClass lab-block (VolRep, day2)": day2.Pass, "east: credential": day2.Pass,
		"S3 profile s3-east": day2.Pass})

	file := filepath.Join(t.TempDir(), "gather.tar.gz")
	var buf bytes.Buffer
	if err := day2.Gather(t.Context(), restConfig(lab.Hub), &buf, day2.GatherOptions{File: file}); err != nil {
		t.Fatalf("gather failed: %v", err)
	}
	files := untar(t, file)
	readme := string(files["drover-gather/README.md"])
	for _, want := range []string{"may not list PersistentVolumeClaims on east", "may not list Secrets on east"} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md does not say %q:\n%s", want, readme)
		}
	}
	if _, ok := files["drover-gather/east/namespaces/shop/volumereplicationgroups.drover.io.yaml"]; !ok {
		t.Errorf("gather did not collect east's groups, which the hub's credential may read")
	}
}

// useHubCredential binds the user drover-hub to drover's role on the cluster and puts its
// kubeconfig in the DRCluster's Secret, until the test ends.
func useHubCredential(t *testing.T, cluster string) {
	t.Helper()
	cl := clusterClient(cluster)
	docs, err := rbac.Manifests(rbac.HubOnManagedCluster, rbac.HubOnManagedClusterDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatal(err)
		}
		if err := createAll(t.Context(), cl, u); err != nil {
			t.Fatal(err)
		}
	}
	c, err := testLab.Cluster(cluster)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := c.Kubeconfig("drover-hub", nil)
	if err != nil {
		t.Fatal(err)
	}
	hub := clusterClient(lab.Hub)
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: lab.DroverNamespace, Name: lab.KubeconfigSecretName(cluster)}
	if err := hub.Get(t.Context(), key, secret); err != nil {
		t.Fatal(err)
	}
	admin := secret.Data[v1alpha1.KubeconfigSecretKey]
	secret.Data[v1alpha1.KubeconfigSecretKey] = kc
	if err := hub.Update(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s := &corev1.Secret{}
		ctx := context.Background()
		err := hub.Get(ctx, key, s)
		if err == nil {
			s.Data[v1alpha1.KubeconfigSecretKey] = admin
			err = hub.Update(ctx, s)
		}
		if err != nil {
			t.Errorf("failed to give DRCluster %s its administrator kubeconfig back: %v", cluster, err)
		}
	})
}
