package hub_test

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	ocmv1beta1 "github.com/drover-io/drover/internal/extapi/ocm/v1beta1"
	"github.com/drover-io/drover/internal/gateway"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/tenancy"
)

// asHubUser is a client of the lab's hub as user (a client certificate of the hub's CA), with
// the rules given in namespace ns and no other right.
func asHubUser(ctx context.Context, g Gomega, admin client.Client, user, ns string, rules ...rbacv1.PolicyRule) client.Client {
	g.Expect(client.IgnoreAlreadyExists(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user}, Rules: rules}
	g.Expect(client.IgnoreAlreadyExists(admin.Create(ctx, role))).To(Succeed())
	g.Expect(client.IgnoreAlreadyExists(admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}))).To(Succeed())
	c, err := testLab.Cluster(lab.Hub)
	g.Expect(err).NotTo(HaveOccurred())
	raw, err := c.Kubeconfig(user, nil)
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	g.Expect(err).NotTo(HaveOccurred())
	s := runtime.NewScheme()
	g.Expect(v1alpha1.AddToScheme(s)).To(Succeed())
	g.Expect(clientgoscheme.AddToScheme(s)).To(Succeed())
	cl, err := client.New(cfg, client.Options{Scheme: s})
	g.Expect(err).NotTo(HaveOccurred())
	return cl
}

var drpcRights = rbacv1.PolicyRule{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"drplacementcontrols"}, Verbs: []string{rbacv1.VerbAll}}

// validated waits for the DRPlacementControl's Validated condition to be decided, and returns it.
func validated(g *WithT, h client.Client, key client.ObjectKey) metav1.Condition {
	var c metav1.Condition
	g.Eventually(func(g Gomega) {
		d := &v1alpha1.DRPlacementControl{}
		g.Expect(h.Get(context.Background(), key, d)).To(Succeed())
		c = cond(d, v1alpha1.ConditionValidated)
		g.Expect(c.Status).NotTo(Equal(metav1.ConditionUnknown))
	}).Should(Succeed(), "the hub decides whether %s is valid", key)
	return c
}

func tenantDRPC(ns, name string, protected []string) *v1alpha1.DRPlacementControl {
	return &v1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.DRPlacementControlSpec{
		DRPolicyRef: v1alpha1.PolicyReference{Name: policyVolRep}, PreferredCluster: lab.East,
		PVCSelector:         metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		ProtectedNamespaces: protected,
	}}
}

// A tenant with every right on DRPlacementControls in its own namespace, on a hub where the
// admission policy is not installed (or was bypassed), gets nothing from the hub beyond its own
// namespace: a DRPlacementControl naming kube-system, another team's namespace or another
// team's Placement is not Validated and no group is made for it; and one made first to squat
// another team's namespace does not keep its owner from protecting it.
func TestATenantWithDRPCRightsGetsNothingFromTheHubBeyondItsNamespace(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(time.Minute)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	h, err := hubClient()
	g.Expect(err).NotTo(HaveOccurred())
	east, err := testLab.Client(lab.East, v1alpha1.AddToScheme)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		p := &v1alpha1.DRPolicy{}
		g.Expect(h.Get(ctx, client.ObjectKey{Name: policyVolRep}, p)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionValidated)).To(BeTrue())
	}).Should(Succeed(), "the lab's policy is Validated, so that only what the tenant names can invalidate its DRPlacementControls")
	mallory := asHubUser(ctx, g, h, "mallory", "tenancy-evil", drpcRights)
	g.Expect(client.IgnoreAlreadyExists(h.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenancy-a"}}))).To(Succeed())
	placement := &ocmv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "tenancy-a", Name: "shop"}}
	g.Expect(h.Create(ctx, placement)).To(Succeed())

	squat := tenantDRPC("tenancy-evil", "squat", []string{"tenancy-a"})
	attacks := []struct {
		drpc   *v1alpha1.DRPlacementControl
		reason string
	}{
		{tenantDRPC("tenancy-evil", "dns", []string{"kube-system"}), v1alpha1.ReasonSystemNamespace},
		{tenantDRPC("tenancy-evil", "agent", []string{"tenancy-evil", "drover-system"}), v1alpha1.ReasonSystemNamespace},
		{squat, v1alpha1.ReasonNamespaceNotAllowed},
		{func() *v1alpha1.DRPlacementControl {
			d := tenantDRPC("tenancy-evil", "steal", nil)
			d.Spec.PlacementRef = &v1alpha1.PlacementReference{Kind: "Placement", Name: "shop", Namespace: "tenancy-a"}
			return d
		}(), v1alpha1.ReasonNamespaceNotAllowed},
	}
	for _, a := range attacks {
		g.Expect(mallory.Create(ctx, a.drpc)).To(Succeed(), "RBAC lets the tenant create %s", a.drpc.Name)
		t.Cleanup(func() { _ = h.Delete(context.Background(), a.drpc) })
	}
	// The owner protects its namespace after the squatter.
	owner := tenantDRPC("tenancy-a", "shop", []string{"tenancy-a"})
	g.Expect(h.Create(ctx, owner)).To(Succeed())
	defer func() {
		g.Expect(h.Delete(ctx, owner)).To(Succeed())
		g.Eventually(func() bool { return apierrors.IsNotFound(h.Get(ctx, client.ObjectKeyFromObject(owner), owner)) }).Should(BeTrue())
	}()

	for _, a := range attacks {
		c := validated(g, h, client.ObjectKeyFromObject(a.drpc))
		t.Logf("%s: Validated %s %s: %s", a.drpc.Name, c.Status, c.Reason, c.Message)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse), "%s is Validated", a.drpc.Name)
		g.Expect(c.Reason).To(Equal(a.reason), a.drpc.Name)
		err := east.Get(ctx, client.ObjectKeyFromObject(a.drpc), &v1alpha1.VolumeReplicationGroup{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "east holds a group for %s: %v", a.drpc.Name, err)
	}
	var c metav1.Condition
	g.Eventually(func(g Gomega) {
		d := &v1alpha1.DRPlacementControl{}
		g.Expect(h.Get(ctx, client.ObjectKeyFromObject(owner), d)).To(Succeed())
		c = cond(d, v1alpha1.ConditionValidated)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
	}).Should(Succeed(), "the squatter keeps the owner from protecting its namespace")
	t.Logf("owner: Validated %s %s: %s", c.Status, c.Reason, c.Message)
	g.Expect(h.Get(ctx, client.ObjectKeyFromObject(placement), placement)).To(Succeed())
	g.Expect(placement.Annotations).NotTo(HaveKey("drover.io/steered-by"), "the tenant steers another team's Placement")
}

// tokenThief is a server of an attacker's, with a certificate the kubeconfig trusts, that
// records the credentials sent to it.
type tokenThief struct {
	mu   sync.Mutex
	seen []string
}

func (s *tokenThief) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if a := r.Header.Get("Authorization"); a != "" {
		s.seen = append(s.seen, a)
	}
	s.mu.Unlock()
	http.NotFound(w, r)
}

func (s *tokenThief) stolen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// Whoever may write a kubeconfig Secret the hub reads must not make the hub send its own
// credential away, run a command, or read a Secret of another namespace: a kubeconfig with
// tokenFile (the hub's ServiceAccount token file, here a file standing for it) and the
// attacker's server is refused, naming the field, and the server sees no credential; a
// DRCluster naming a Secret outside drover-system is refused.
func TestAKubeconfigSecretCannotMakeTheHubSendItsCredentialsAway(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(time.Minute)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	h, err := hubClient()
	g.Expect(err).NotTo(HaveOccurred())
	writer := asHubUser(ctx, g, h, "secret-writer", lab.S3SecretNamespace,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create", "update", "patch"}})
	asHubUser(ctx, g, h, "secret-writer", "tenancy-secrets",
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create", "update", "patch"}})

	thief := &tokenThief{}
	srv := httptest.NewTLSServer(thief)
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	tokenFile := filepath.Join(t.TempDir(), "token")
	g.Expect(os.WriteFile(tokenFile, []byte("the-hubs-own-token"), 0o600)).To(Succeed())
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: srv.URL, CertificateAuthorityData: ca}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{TokenFile: tokenFile}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	raw, err := clientcmd.Write(*kc)
	g.Expect(err).NotTo(HaveOccurred())

	cases := []struct{ cluster, ns, want string }{
		{"thief", lab.S3SecretNamespace, "users[u].user.tokenFile"},
		{"elsewhere", "tenancy-secrets", "is not in drover-system"},
	}
	for _, tc := range cases {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tc.ns, Name: "kubeconfig-" + tc.cluster},
			Data: map[string][]byte{v1alpha1.KubeconfigSecretKey: raw}}
		g.Expect(writer.Create(ctx, secret)).To(Succeed())
		t.Cleanup(func() { _ = h.Delete(context.Background(), secret) })
		drc := &v1alpha1.DRCluster{ObjectMeta: metav1.ObjectMeta{Name: tc.cluster}, Spec: v1alpha1.DRClusterSpec{
			KubeconfigSecretRef: v1alpha1.SecretRef{Namespace: tc.ns, Name: secret.Name}, S3ProfileName: "s3-" + tc.cluster, Region: tc.cluster,
		}}
		g.Expect(h.Create(ctx, drc)).To(Succeed())
		t.Cleanup(func() { _ = h.Delete(context.Background(), drc) })
	}
	for _, tc := range cases {
		var c metav1.Condition
		g.Eventually(func(g Gomega) {
			drc := &v1alpha1.DRCluster{}
			g.Expect(h.Get(ctx, client.ObjectKey{Name: tc.cluster}, drc)).To(Succeed())
			for _, cc := range drc.Status.Conditions {
				if cc.Type == v1alpha1.ConditionValidated {
					c = cc
				}
			}
			g.Expect(c.Reason).NotTo(BeEmpty())
		}).Should(Succeed(), "the hub probes DRCluster %s", tc.cluster)
		t.Logf("%s: Validated %s %s: %s; the attacker's server received %q", tc.cluster, c.Status, c.Reason, c.Message, thief.stolen())
		g.Expect(thief.stolen()).To(BeEmpty(), "the hub sent its credential to the kubeconfig's server")
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Message).To(ContainSubstring(tc.want))
	}
}

// The agent does not take the hub's word for what it may protect: a group for kube-system,
// written with the hub's own credential on east (what a compromised hub, or one whose checks
// were bypassed, could write), is refused with a condition naming the namespace, and the agent
// captures and protects nothing there.
func TestTheAgentRefusesAGroupOfASystemNamespaceFromTheHubsCredential(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(time.Minute)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	h, err := hubClient()
	g.Expect(err).NotTo(HaveOccurred())
	secret := &corev1.Secret{}
	g.Expect(h.Get(ctx, client.ObjectKey{Namespace: lab.S3SecretNamespace, Name: "kubeconfig-" + lab.East}, secret)).To(Succeed())
	cfg, err := gateway.RESTConfig(secret)
	g.Expect(err).NotTo(HaveOccurred())
	s := runtime.NewScheme()
	g.Expect(v1alpha1.AddToScheme(s)).To(Succeed())
	asHub, err := client.New(cfg, client.Options{Scheme: s})
	g.Expect(err).NotTo(HaveOccurred())
	asHubCore, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	eastAdmin, err := testLab.Client(lab.East, clientgoscheme.AddToScheme, v1alpha1.AddToScheme)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(client.IgnoreAlreadyExists(eastAdmin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenancy-agent"}}))).To(Succeed())

	policy := &v1alpha1.DRPolicy{}
	g.Expect(h.Get(ctx, client.ObjectKey{Name: policyVolRep}, policy)).To(Succeed())
	vrg := &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "tenancy-agent", Name: "dns"},
		Spec: v1alpha1.VolumeReplicationGroupSpec{
			ReplicationState: v1alpha1.ReplicationStatePrimary, ProtectedNamespaces: []string{"kube-system"},
			PVCSelector: metav1.LabelSelector{}, S3Profiles: policy.Spec.S3Profiles,
			SchedulingInterval: policy.Spec.SchedulingInterval, StorageClassBackends: policy.Spec.StorageClassBackends,
		}}
	err = asHub.Create(ctx, vrg.DeepCopy())
	g.Expect(err).To(MatchError(ContainSubstring("the hub never makes a VolumeReplicationGroup of a system namespace")),
		"the admission policy join installs refuses the hub's credential such a group")
	t.Logf("the hub's credential: %v", err)
	for _, attack := range []struct {
		name string
		obj  client.Object
		want string
	}{
		{"a ServiceAccount token for the agent", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "drover-system", Name: "agent-token",
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "drover-agent"}}, Type: corev1.SecretTypeServiceAccountToken},
			`cannot create resource "secrets"`},
		{"a Secret in kube-system, even labelled as a key", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "coredns-key",
			Labels: map[string]string{"drover.io/vrg-name": "db"}}}, `cannot create resource "secrets"`},
		{"a Secret in an application's namespace", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "tenancy-agent", Name: "planted",
			Labels: map[string]string{"drover.io/vrg-name": "db"}}}, `cannot create resource "secrets"`},
		{"a namespace labelled an admin namespace, whose groups the agent lets protect others", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: "tenancy-squat", Labels: map[string]string{tenancy.LabelAdminNamespace: "true"}}}, "the hub never labels a namespace drover.io/admin-namespace"},
	} {
		err := asHubCore.Create(ctx, attack.obj)
		g.Expect(err).To(MatchError(ContainSubstring(attack.want)), "%s was not refused", attack.name)
		t.Logf("%s: %v", attack.name, err)
	}
	// The agent refuses such a group too, whoever wrote it (here east's administrator).
	g.Expect(eastAdmin.Create(ctx, vrg)).To(Succeed())
	defer func() {
		g.Expect(eastAdmin.Delete(ctx, vrg)).To(Succeed())
		g.Eventually(func() bool { return apierrors.IsNotFound(eastAdmin.Get(ctx, client.ObjectKeyFromObject(vrg), vrg)) }).Should(BeTrue())
	}()
	var c metav1.Condition
	g.Eventually(func(g Gomega) {
		c = dataReadyOf(ctx, g, eastAdmin, vrg)
		g.Expect(c.Message).To(ContainSubstring("namespace kube-system is a system namespace"), "%s %s: %s", c.Status, c.Reason, c.Message)
	}).Should(Succeed(), "the agent refuses the group")
	t.Logf("DataReady %s %s: %s", c.Status, c.Reason, c.Message)
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
}

// dataReadyOf is the DataReady condition a managed cluster's agent set on vrg, read as cl;
// the zero condition while there is none.
func dataReadyOf(ctx context.Context, g Gomega, cl client.Client, vrg *v1alpha1.VolumeReplicationGroup) metav1.Condition {
	got := &v1alpha1.VolumeReplicationGroup{}
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(vrg), got)).To(Succeed())
	if c := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionDataReady); c != nil {
		return *c
	}
	return metav1.Condition{}
}
