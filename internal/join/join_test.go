package join_test

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/join"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/objectstore"
)

func TestJoinCreatesTheHubsIdentityAndASecondJoinChangesNothing(t *testing.T) {
	var out bytes.Buffer
	o := joinOptions(t, lab.East, lab.East, &out)
	o.Region = "eu-1"
	report := mustJoin(t, o)
	mustContain(t, report, "ServiceAccount drover-system/drover-hub created", "DRCluster east created",
		"name: store-east", "endpoint: http://127.0.0.1:9000", "bucket: drover-east")

	drc := &v1alpha1.DRCluster{}
	if err := adminClient(t, lab.Hub).Get(t.Context(), client.ObjectKey{Name: lab.East}, drc); err != nil {
		t.Fatalf("the DRCluster was not created: %v", err)
	}
	want := v1alpha1.DRClusterSpec{
		KubeconfigSecretRef: v1alpha1.SecretRef{Namespace: join.DefaultNamespace, Name: join.KubeconfigSecretName(lab.East)},
		S3ProfileName:       profileName(lab.East), Region: "eu-1",
	}
	if drc.Spec != want {
		t.Errorf("DRCluster spec = %+v, want %+v", drc.Spec, want)
	}
	crb := &rbacv1.ClusterRoleBinding{}
	if err := adminClient(t, lab.East).Get(t.Context(), client.ObjectKey{Name: "drover-hub-on-managed-cluster"}, crb); err != nil {
		t.Fatalf("the hub's role binding was not created: %v", err)
	}
	wantSubject := rbacv1.Subject{Kind: "ServiceAccount", Namespace: join.DefaultNamespace, Name: join.ServiceAccountName}
	if len(crb.Subjects) != 1 || crb.Subjects[0] != wantSubject {
		t.Errorf("binding subjects = %+v, want only %+v", crb.Subjects, wantSubject)
	}
	s3 := getSecret(t, lab.East, profileName(lab.East))
	if string(s3.Data["AWS_ACCESS_KEY_ID"]) != "AKID-east" || string(s3.Data["AWS_SECRET_ACCESS_KEY"]) != "not-a-real-secret-east" {
		t.Errorf("the S3 Secret on east holds %v", slices.Sorted(maps.Keys(s3.Data)))
	}
	if _, err := objectstore.ParseKeyring(string(s3.Data[objectstore.SecretStoreKeysKey]), string(s3.Data[objectstore.SecretStoreKeyIDKey]), "east"); err != nil {
		t.Errorf("the S3 Secret on east holds no usable store keys: %v", err)
	}
	hubCopy := getSecret(t, lab.Hub, profileName(lab.East))
	if !bytes.Equal(hubCopy.Data[objectstore.SecretStoreKeysKey], s3.Data[objectstore.SecretStoreKeysKey]) {
		t.Errorf("the hub's copy of the S3 Secret holds other store keys than east's")
	}
	agentConfig := &corev1.ConfigMap{}
	if err := adminClient(t, lab.East).Get(t.Context(), client.ObjectKey{Namespace: join.DefaultNamespace, Name: join.AgentConfigMapName}, agentConfig); err != nil {
		t.Fatalf("the agent's ConfigMap was not created: %v", err)
	}
	if got := agentConfig.Data[join.AgentClusterNameKey]; got != lab.East {
		t.Errorf("the agent's ConfigMap names cluster %q, want %q", got, lab.East)
	}

	hubBefore, eastBefore := labelled(t, lab.Hub, lab.East), labelled(t, lab.East, lab.East)
	wantHub := []string{"DRCluster /east", "Secret drover-system/kubeconfig-east", "Secret drover-system/store-east"}
	if got := slices.Sorted(maps.Keys(hubBefore)); !slices.Equal(got, wantHub) {
		t.Errorf("on the hub join labelled %v, want %v", got, wantHub)
	}
	wantEast := []string{"ClusterRole /drover-hub-on-managed-cluster", "ClusterRoleBinding /drover-hub-on-managed-cluster",
		"Role drover-system/drover-hub-on-managed-cluster", "RoleBinding drover-system/drover-hub-on-managed-cluster",
		"Secret drover-system/drover-hub-token", "Secret drover-system/store-east", "ServiceAccount drover-system/drover-hub",
		"ValidatingAdmissionPolicy /drover-hub-on-managed-cluster", "ValidatingAdmissionPolicyBinding /drover-hub-on-managed-cluster"}
	if got := slices.Sorted(maps.Keys(eastBefore)); !slices.Equal(got, wantEast) {
		t.Errorf("on east join labelled %v, want %v", got, wantEast)
	}

	// The hub's credential is a token of the TokenRequest API that expires, bound to the
	// Secret drover-hub-token. A second join keeps it (it is valid and has most of its life
	// left): joining again changes nothing.
	token, claims := hubToken(t, lab.East)
	binding := getSecret(t, lab.East, join.TokenSecretName)
	if claims.Lifetime() != join.DefaultTokenLifetime || claims.SecretName != join.TokenSecretName || claims.SecretUID != binding.UID ||
		claims.Namespace != join.DefaultNamespace || claims.ServiceAccount != join.ServiceAccountName {
		t.Errorf("the hub's token has claims %+v, want ServiceAccount %s/%s, bound to Secret %s (uid %s), valid for %s",
			claims, join.DefaultNamespace, join.ServiceAccountName, join.TokenSecretName, binding.UID, join.DefaultTokenLifetime)
	}
	if binding.Type != corev1.SecretTypeOpaque || len(binding.Data) > 0 {
		t.Errorf("Secret %s is of type %s with %d keys, want an empty Opaque Secret", join.TokenSecretName, binding.Type, len(binding.Data))
	}

	out.Reset()
	if err := join.Join(t.Context(), o); err != nil {
		t.Fatalf("the second join failed: %v", err)
	}
	if again, _ := hubToken(t, lab.East); again != token {
		t.Errorf("the second join replaced the hub's token, still valid for most of its life")
	}
	if strings.Contains(out.String(), " created") || strings.Contains(out.String(), " configured") {
		t.Errorf("the second join changed something:\n%s", out.String())
	}
	if after := labelled(t, lab.Hub, lab.East); !maps.Equal(after, hubBefore) {
		t.Errorf("the second join changed the hub's objects: %v, before %v", after, hubBefore)
	}
	if after := labelled(t, lab.East, lab.East); !maps.Equal(after, eastBefore) {
		t.Errorf("the second join changed east's objects: %v, before %v", after, eastBefore)
	}
	if again := getSecret(t, lab.East, profileName(lab.East)); !bytes.Equal(again.Data[objectstore.SecretStoreKeysKey], s3.Data[objectstore.SecretStoreKeysKey]) {
		t.Errorf("the second join changed the store keys: the objects sealed with them would no longer open")
	}
}

// The hub's credential is the least-privilege identity: it manages VRGs and may not read the
// application's PVCs or pods.
func TestTheJoinedTokenMayManageVRGsOnlyOnTheManagedCluster(t *testing.T) {
	var out bytes.Buffer
	mustJoin(t, joinOptions(t, lab.East, lab.East, &out))

	kubeconfig := getSecret(t, lab.Hub, join.KubeconfigSecretName(lab.East)).Data[v1alpha1.KubeconfigSecretKey]
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatalf("the hub's kubeconfig Secret holds no usable kubeconfig: %v", err)
	}
	if cfg.BearerToken == "" || len(cfg.CertData) > 0 {
		t.Errorf("the hub's kubeconfig should authenticate with the ServiceAccount's token only")
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	hubView, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := hubView.List(t.Context(), &v1alpha1.VolumeReplicationGroupList{}); err != nil {
		t.Errorf("the hub's token may not list VRGs on east: %v", err)
	}
	for name, list := range map[string]client.ObjectList{
		"PVCs": &corev1.PersistentVolumeClaimList{}, "pods": &corev1.PodList{}, "Secrets": &corev1.SecretList{},
	} {
		if err := hubView.List(t.Context(), list); !apierrors.IsForbidden(err) {
			t.Errorf("listing %s with the hub's token returned %v, want Forbidden", name, err)
		}
	}
}

// Each managed cluster's agent writes to every profile of its policy, so each needs the
// credentials of the other's profile too.
func TestJoinGivesEveryJoinedClusterTheOthersS3Credentials(t *testing.T) {
	var out bytes.Buffer
	mustJoin(t, joinOptions(t, lab.East, lab.East, &out))
	out.Reset()
	mustJoin(t, joinOptions(t, lab.West, lab.West, &out))

	for _, c := range []struct{ on, profile string }{
		{lab.West, profileName(lab.East)}, {lab.East, profileName(lab.West)}, {lab.West, profileName(lab.West)},
	} {
		s := getSecret(t, c.on, c.profile)
		owner := strings.TrimPrefix(c.profile, "store-")
		if got := string(s.Data["AWS_ACCESS_KEY_ID"]); got != "AKID-"+owner {
			t.Errorf("Secret %s on %s holds access key %q, want AKID-%s", c.profile, c.on, got, owner)
		}
		if s.Labels[join.LabelCluster] != c.on {
			t.Errorf("Secret %s on %s is labelled for %q, want %s (so unjoin %s removes it)", c.profile, c.on, s.Labels[join.LabelCluster], c.on, c.on)
		}
	}
}

func TestJoinDryRunPrintsTheObjectsAndChangesNothing(t *testing.T) {
	var out bytes.Buffer
	o := joinOptions(t, lab.West, lab.West, &out)
	o.DryRun = true
	if err := join.Join(t.Context(), o); err != nil {
		t.Fatalf("join --dry-run failed: %v", err)
	}
	mustContain(t, out.String(), "kind: ServiceAccount", "kind: ClusterRoleBinding", "kind: DRCluster",
		"name: drover-hub-on-managed-cluster", "kind: ServiceAccount\n  name: drover-hub", "AWS_SECRET_ACCESS_KEY: <redacted>",
		"store-keys: <redacted>", "s3ProfileName: store-west", "# on the hub at", "# on managed cluster west at")
	if strings.Contains(out.String(), "not-a-real-secret") {
		t.Errorf("the dry run printed the secret access key:\n%s", out.String())
	}
	if got := labelled(t, lab.Hub, lab.West); len(got) > 0 {
		t.Errorf("the dry run created on the hub: %v", got)
	}
	if got := labelled(t, lab.West, lab.West); len(got) > 0 {
		t.Errorf("the dry run created on west: %v", got)
	}
}

// The clusters joined before are reached with the operator's kubeconfigs, never with the hub's
// credential, which may not read or write Secrets there. A joined cluster without one stops
// join and the rotations before they write anything, naming the cluster and the flag to pass;
// a kubeconfig of another cluster given by mistake is refused, naming the cluster it reaches,
// and a rotation then makes no key current.
func TestJoinAndRotationsNameTheClusterWhoseKubeconfigIsMissingOrWrong(t *testing.T) {
	var out bytes.Buffer
	mustJoin(t, joinOptions(t, lab.East, lab.East, &out))
	eastBefore, hubBefore := labelled(t, lab.East, lab.East), labelled(t, lab.Hub, lab.East)

	out.Reset()
	o := joinOptions(t, lab.West, lab.West, &out)
	o.Peers = nil
	err := join.Join(t.Context(), o)
	t.Logf("join west without east's kubeconfig: %v", err)
	mustContain(t, errString(err), "no kubeconfig for joined cluster(s) east", "--peer-kubeconfig east=FILE", "drover cluster unjoin NAME")
	if got := labelled(t, lab.West, lab.West); len(got) > 0 {
		t.Errorf("the refused join wrote on west: %v", got)
	}
	if got := labelled(t, lab.Hub, lab.West); len(got) > 0 {
		t.Errorf("the refused join wrote on the hub: %v", got)
	}

	insecure := labCluster(t, lab.East)
	insecure.Config.Insecure, insecure.Config.CAData = true, nil
	o.Peers = map[string]join.Cluster{lab.East: insecure}
	err = join.Join(t.Context(), o)
	t.Logf("join west with a kubeconfig of east that skips TLS verification: %v", err)
	mustContain(t, errString(err), "(--peer-kubeconfig east=FILE) sets insecure-skip-tls-verify", "--allow-insecure-kubeconfig")
	if got := labelled(t, lab.West, lab.West); len(got) > 0 {
		t.Errorf("the refused join wrote on west: %v", got)
	}

	out.Reset()
	o.Peers = map[string]join.Cluster{lab.East: labCluster(t, lab.West)}
	mustJoin(t, o)
	t.Logf("join west with west's kubeconfig given for east:\n%s", out.String())
	mustContain(t, out.String(), "warning: cluster east did not get the credentials of S3 profile store-west",
		"given for cluster east (--peer-kubeconfig east=FILE), reaches the cluster at", "which is joined as west")
	if err := adminClient(t, lab.East).Get(t.Context(), client.ObjectKey{Namespace: join.DefaultNamespace, Name: profileName(lab.West)}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("east holds S3 profile Secret %s after a join given another cluster's kubeconfig for it: %v", profileName(lab.West), err)
	}

	profile := profileName(lab.East)
	ro := rotateOptions(t, profile, &out)
	delete(ro.Clusters, lab.West)
	out.Reset()
	err = join.RotateStoreKey(t.Context(), ro)
	t.Logf("rotate-store-key without west's kubeconfig: %v", err)
	mustContain(t, errString(err), "no kubeconfig for joined cluster(s) west", "--cluster-kubeconfig west=FILE")
	if after := labelled(t, lab.East, lab.East); !maps.Equal(after, eastBefore) {
		t.Errorf("the refused rotation changed east's objects: %v, before %v", after, eastBefore)
	}
	if after := labelled(t, lab.Hub, lab.East); !maps.Equal(after, hubBefore) {
		t.Errorf("the refused rotation changed the hub's objects: %v, before %v", after, hubBefore)
	}

	before, _ := copyKeys(t, lab.East, profile)
	ro.Clusters[lab.West] = labCluster(t, lab.West)
	ro.Clusters[lab.East] = labCluster(t, lab.West)
	out.Reset()
	err = join.RotateStoreKey(t.Context(), ro)
	t.Logf("rotate-store-key with west's kubeconfig given for east: %v\n%s", err, out.String())
	mustContain(t, errString(err), "cluster east: ", "given for cluster east (--cluster-kubeconfig east=FILE)", "which is joined as west",
		"stopped before making it current")
	for _, c := range []string{lab.Hub, lab.East, lab.West} {
		if keys, _ := copyKeys(t, c, profile); keys.Current != before.Current {
			t.Errorf("the stopped rotation made key %s current on %s, want %s", keys.Current, c, before.Current)
		}
	}
}
