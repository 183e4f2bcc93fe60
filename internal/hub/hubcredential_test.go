package hub_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/gateway"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/tenancy"
)

// hubCredential returns clients of managed cluster name with the hub's own credential there:
// the kubeconfig Secret `drover cluster join` wrote on the hub.
func hubCredential(g Gomega, name string) (drover, core client.Client) {
	h, err := hubClient()
	g.Expect(err).NotTo(HaveOccurred())
	secret := &corev1.Secret{}
	g.Expect(h.Get(context.Background(), client.ObjectKey{Namespace: lab.S3SecretNamespace, Name: "kubeconfig-" + name}, secret)).To(Succeed())
	cfg, err := gateway.RESTConfig(secret)
	g.Expect(err).NotTo(HaveOccurred())
	s := runtime.NewScheme()
	g.Expect(v1alpha1.AddToScheme(s)).To(Succeed())
	drover, err = client.New(cfg, client.Options{Scheme: s})
	g.Expect(err).NotTo(HaveOccurred())
	core, err = client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	return drover, core
}

// The hub's credential on a managed cluster has no right on Secrets: it
// cannot take over an application's own Secret by adding drover's label to it, nor ask for privileged VolSync
// movers (root in the application's namespace) for a group outside an admin namespace, nor
// create a namespace labelled as a drill's sandbox (which the agent deletes); and the agent
// refuses such a group whoever wrote it, leaving the namespace without VolSync's
// privileged-movers annotation.
func TestTheHubsCredentialCannotTakeOverAnApplicationsSecretNorAskForPrivilegedMovers(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(time.Minute)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	asHub, asHubCore := hubCredential(g, lab.East)
	eastAdmin, err := testLab.Client(lab.East, clientgoscheme.AddToScheme, v1alpha1.AddToScheme)
	g.Expect(err).NotTo(HaveOccurred())
	const ns = "hub-credential-app"
	g.Expect(client.IgnoreAlreadyExists(eastAdmin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())

	// The application's own Secret, without drover's labels.
	password := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-password"}, Data: map[string][]byte{"password": []byte("the-apps-own")}}
	g.Expect(eastAdmin.Create(ctx, password)).To(Succeed())
	taken := password.DeepCopy()
	taken.Labels = map[string]string{"drover.io/vrg-name": "db"}
	taken.Data = map[string][]byte{"password": []byte("the-attackers")}
	err = asHubCore.Patch(ctx, taken, client.MergeFrom(password))
	t.Logf("the hub's credential labels and rewrites the application's Secret: %v", err)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the hub's credential patched an application's Secret: %v", err)
	g.Expect(err).To(MatchError(ContainSubstring(`cannot patch resource "secrets"`)))
	got := &corev1.Secret{}
	g.Expect(eastAdmin.Get(ctx, client.ObjectKeyFromObject(password), got)).To(Succeed())
	g.Expect(string(got.Data["password"])).To(Equal("the-apps-own"), "the application's Secret is unchanged")

	// A namespace labelled as a drill's sandbox, which the agent deletes at a drill's end: an
	// application's namespace so created on the secondary would go with its replica.
	squat := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hub-credential-app-b", Labels: map[string]string{"drover.io/drill": "x1"}}}
	err = asHubCore.Create(ctx, squat)
	t.Logf("the hub's credential creates a namespace labelled as a drill's sandbox: %v", err)
	if err == nil {
		_ = eastAdmin.Delete(ctx, squat)
	}
	g.Expect(err).To(MatchError(ContainSubstring("the hub never labels a namespace drover.io/drill")))

	// A namespace that lets the agent run a recipe's hooks (exec into its pods): the hub's
	// credential writes the recipe, so it may not also allow it.
	hooked := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hub-credential-app-c", Labels: map[string]string{tenancy.LabelHooks: tenancy.HooksEnabled}}}
	err = asHubCore.Create(ctx, hooked)
	t.Logf("the hub's credential creates a namespace that allows hooks: %v", err)
	if err == nil {
		_ = eastAdmin.Delete(ctx, hooked)
	}
	g.Expect(err).To(MatchError(ContainSubstring("the hub never labels a namespace drover.io/hooks")))

	// A group asking for privileged movers, outside an admin namespace.
	policy := &v1alpha1.DRPolicy{}
	h, err := hubClient()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.Get(ctx, client.ObjectKey{Name: policyVolRep}, policy)).To(Succeed())
	vrg := &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "root-movers"},
		Spec: v1alpha1.VolumeReplicationGroupSpec{
			ReplicationState: v1alpha1.ReplicationStateSecondary, PVCSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "none"}},
			S3Profiles: policy.Spec.S3Profiles, SchedulingInterval: policy.Spec.SchedulingInterval, StorageClassBackends: policy.Spec.StorageClassBackends,
			VolSync: &v1alpha1.VolSyncSpec{Movers: v1alpha1.VolSyncMoversPrivileged},
		}}
	err = asHub.Create(ctx, vrg.DeepCopy())
	t.Logf("the hub's credential creates a group with privileged movers in %s: %v", ns, err)
	if err == nil {
		_ = eastAdmin.Delete(ctx, vrg.DeepCopy())
	}
	g.Expect(err).To(MatchError(ContainSubstring("the hub asks for privileged VolSync movers")))

	// The agent refuses it too, whoever wrote it (here east's administrator).
	g.Expect(eastAdmin.Create(ctx, vrg)).To(Succeed())
	defer func() {
		g.Expect(eastAdmin.Delete(ctx, vrg)).To(Succeed())
		g.Eventually(func() bool { return apierrors.IsNotFound(eastAdmin.Get(ctx, client.ObjectKeyFromObject(vrg), vrg)) }).Should(BeTrue())
	}()
	var c metav1.Condition
	g.Eventually(func(g Gomega) {
		c = dataReadyOf(ctx, g, eastAdmin, vrg)
		g.Expect(c.Reason).NotTo(BeEmpty(), "the agent says something of the group")
	}).Should(Succeed(), "the agent looks at the group")
	time.Sleep(2 * time.Second) // a pass that would annotate the namespace has had its chance
	nsObj := &corev1.Namespace{}
	g.Expect(eastAdmin.Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(Succeed())
	t.Logf("DataReady %s %s: %s; namespace annotations %v", c.Status, c.Reason, c.Message, nsObj.Annotations)
	g.Expect(nsObj.Annotations).NotTo(HaveKey("volsync.backube/privileged-movers"), "the agent gave the namespace privileged movers")
	g.Expect(c.Reason).To(Equal(v1alpha1.ReasonNamespaceNotAllowed))
	g.Expect(c.Message).To(ContainSubstring("privileged VolSync movers"))
}

// A tenant with DRPlacementControl rights in its own namespace may name only the DRPolicies an
// administrator lets it: never one with privileged VolSync movers (root in the protected
// namespaces: only an admin namespace may), and not one whose annotation
// drover.io/tenant-namespaces lists other namespaces. The hub says so in Validated and makes no
// group.
func TestATenantNamesOnlyTheDRPoliciesItsAdministratorLetsIt(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(time.Minute)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	h, err := hubClient()
	g.Expect(err).NotTo(HaveOccurred())
	base := &v1alpha1.DRPolicy{}
	g.Expect(h.Get(ctx, client.ObjectKey{Name: policyVolRep}, base)).To(Succeed())
	privileged := &v1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Name: "tenant-root-movers"}, Spec: *base.Spec.DeepCopy()}
	privileged.Spec.VolSyncMovers = v1alpha1.VolSyncMoversPrivileged
	listed := &v1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Name: "tenant-listed",
		Annotations: map[string]string{tenancy.AnnotationTenantNamespaces: "team-other, team-third"}}, Spec: *base.Spec.DeepCopy()}
	for _, p := range []*v1alpha1.DRPolicy{privileged, listed} {
		g.Expect(h.Create(ctx, p)).To(Succeed())
		defer func() { _ = h.Delete(ctx, p) }()
	}
	const ns = "team-policy"
	tenant := asHubUser(ctx, g, h, "tenant-policy", ns, drpcRights)
	for _, tc := range []struct{ policy, want string }{
		{privileged.Name, "asks for privileged VolSync movers"},
		{listed.Name, "may be named only from the namespaces its administrator listed"},
	} {
		drpc := tenantDRPC(ns, tc.policy, []string{ns})
		drpc.Spec.DRPolicyRef.Name = tc.policy
		g.Expect(tenant.Create(ctx, drpc)).To(Succeed())
		defer func() { _ = h.Delete(ctx, drpc) }()
		var c metav1.Condition
		g.Eventually(func(g Gomega) {
			c = validated(NewWithT(t), h, client.ObjectKeyFromObject(drpc))
			g.Expect(c.Reason).NotTo(Equal(v1alpha1.ReasonPolicyNotValidated), "the new policy is not checked yet: %s", c.Message)
		}).Should(Succeed())
		t.Logf("DRPolicy %s from %s: Validated %s %s: %s", tc.policy, ns, c.Status, c.Reason, c.Message)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonPolicyNotAllowed))
		g.Expect(c.Message).To(ContainSubstring(tc.want))
		eastAdmin, err := testLab.Client(lab.East, v1alpha1.AddToScheme)
		g.Expect(err).NotTo(HaveOccurred())
		g.Consistently(func() bool {
			return apierrors.IsNotFound(eastAdmin.Get(ctx, client.ObjectKey{Namespace: ns, Name: tc.policy}, &v1alpha1.VolumeReplicationGroup{}))
		}, 2*time.Second).Should(BeTrue(), "no group is made for a DRPlacementControl naming %s", tc.policy)
		// The next case protects the same namespace: this one goes first, so that case is
		// judged for its policy, not as a second DRPlacementControl of the namespace.
		g.Expect(h.Delete(ctx, drpc)).To(Succeed())
		g.Eventually(func() bool {
			return apierrors.IsNotFound(h.Get(ctx, client.ObjectKeyFromObject(drpc), &v1alpha1.DRPlacementControl{}))
		}).Should(BeTrue(), "DRPlacementControl %s is deleted", drpc.Name)
	}
}
