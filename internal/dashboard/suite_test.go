package dashboard

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab/labtest"
)

// The tests run the dashboard against one API server with drover's CRDs, standing for the hub:
// no hub runs, the tests write the statuses the hub would. adminConfig is the API server's
// administrator; a test that plays a person impersonates a user whose RBAC it sets up.
var (
	adminConfig *rest.Config
	k8sClient   client.Client
)

func TestMain(m *testing.M) {
	labtest.MainWithAPIServerConfig(m, []string{"config/crd/bases"},
		[]func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme},
		func(cfg *rest.Config, cl client.Client) {
			adminConfig, k8sClient = cfg, cl
			if err := setUp(context.Background()); err != nil {
				fmt.Fprintln(os.Stderr, "FAIL: failed to set up the hub's objects:", err)
				os.Exit(1)
			}
		})
}

// The fleet the tests share: DRPolicy pair pairs east and west; shop/db runs protected on east
// (synced 3 s ago, interval 10 s); shop/cart is protected too; other/ledger belongs to a
// namespace the restricted person may not read.
const (
	shop, other  = "shop", "other"
	interval     = 10 * time.Second
	policyName   = "pair"
	restricted   = "alice@example.com"
	plantedValue = "planted-secret-value-6d1f0b"
	plantedS3Key = "planted-s3-key-AKIA5EXAMPLE"
)

func setUp(ctx context.Context) error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: shop}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "drover-system"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "drover-system", Name: "east-kubeconfig"},
			StringData: map[string]string{"kubeconfig": "token: " + plantedValue}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "drover-system", Name: "s3"},
			StringData: map[string]string{"AWS_ACCESS_KEY_ID": plantedS3Key, "AWS_SECRET_ACCESS_KEY": plantedValue}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: shop, Name: "db-credentials"}, StringData: map[string]string{"password": plantedValue}},
	}
	for _, name := range []string{"east", "west"} {
		objs = append(objs, &v1alpha1.DRCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.DRClusterSpec{
			KubeconfigSecretRef: v1alpha1.SecretRef{Namespace: "drover-system", Name: name + "-kubeconfig"}, S3ProfileName: "s3-" + name, Region: name}})
	}
	objs = append(objs, &v1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Name: policyName}, Spec: v1alpha1.DRPolicySpec{
		DRClusters: []string{"east", "west"}, SchedulingInterval: v1alpha1.SchedulingInterval(interval.String()),
		S3Profiles: []v1alpha1.S3Profile{{Name: "s3-east", Endpoint: "http://127.0.0.1:1", Bucket: "bucket", Region: "east",
			SecretRef: v1alpha1.SecretRef{Namespace: "drover-system", Name: "s3"}}},
		StorageClassBackends: []v1alpha1.StorageClassBackend{{StorageClassName: "block", Backend: v1alpha1.BackendVolRep}}}})
	for _, o := range objs {
		if err := k8sClient.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("failed to create %T %s: %w", o, o.GetName(), err)
		}
	}
	for _, name := range []string{"east", "west"} {
		cl := &v1alpha1.DRCluster{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: name}, cl); err != nil {
			return err
		}
		setTrue(&cl.Status.Conditions, cl.Generation, v1alpha1.ConditionValidated, v1alpha1.ConditionReachable)
		if err := k8sClient.Status().Update(ctx, cl); err != nil {
			return err
		}
	}
	for _, key := range []client.ObjectKey{{Namespace: shop, Name: "db"}, {Namespace: shop, Name: "cart"}, {Namespace: other, Name: "ledger"}} {
		if err := createProtected(ctx, key, 3*time.Second); err != nil {
			return err
		}
	}
	return grantOneNamespace(ctx)
}

// createProtected creates an application Deployed on east, PeerReady and Protected, its last
// sync lag ago, with its groups on east (primary, one PVC, data-NAME) and west.
func createProtected(ctx context.Context, key client.ObjectKey, lag time.Duration) error {
	d := &v1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Spec: v1alpha1.DRPlacementControlSpec{DRPolicyRef: v1alpha1.PolicyReference{Name: policyName}, PreferredCluster: "east",
			PVCSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": key.Name}}, ProtectedNamespaces: []string{key.Namespace}}}
	if err := k8sClient.Create(ctx, d); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	synced := metav1.NewTime(time.Now().Add(-lag))
	one := int32(1)
	d.Status = v1alpha1.DRPlacementControlStatus{Phase: v1alpha1.PhaseDeployed, Progression: "Completed", CurrentPrimary: "east",
		ActionTarget: "east", LastGroupSyncTime: &synced, VRGs: []v1alpha1.VRGSummary{
			{Cluster: "east", ReplicationState: v1alpha1.ReplicationStatePrimary, State: v1alpha1.StatePrimary, DataReady: metav1.ConditionTrue,
				DataProtected: metav1.ConditionTrue, LastGroupSyncTime: &synced, ProtectedPVCs: &one,
				PVCs: []v1alpha1.PVCSyncSummary{{Namespace: key.Namespace, Name: "data-" + key.Name, DataProtected: metav1.ConditionTrue,
					LastSyncTime: &synced, LastSyncDuration: &metav1.Duration{Duration: time.Second}}}},
			{Cluster: "west", ReplicationState: v1alpha1.ReplicationStateSecondary, State: v1alpha1.StateSecondary, DataReady: metav1.ConditionTrue,
				DataProtected: metav1.ConditionTrue, ProtectedPVCs: &one}}}
	setTrue(&d.Status.Conditions, d.Generation, v1alpha1.ConditionValidated, v1alpha1.ConditionAvailable,
		v1alpha1.ConditionPeerReady, v1alpha1.ConditionProtected)
	return k8sClient.Status().Update(ctx, d)
}

func setTrue(conds *[]metav1.Condition, generation int64, types ...string) {
	for _, t := range types {
		apimeta.SetStatusCondition(conds, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded,
			Message: t + " as the test sets it", ObservedGeneration: generation, LastTransitionTime: metav1.Now()})
	}
}

// grantOneNamespace binds the restricted person to what a team gets: read the fleet's
// cluster-scoped DRPolicies and DRClusters, read and patch the DRPlacementControls of shop
// only, and nothing of other.
func grantOneNamespace(ctx context.Context) error {
	read := []string{"get", "list", "watch"}
	objs := []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "fleet-reader"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"drpolicies", "drclusters"}, Verbs: read}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-fleet-reader"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "fleet-reader"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: restricted}}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: shop, Name: "apps"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"drplacementcontrols"}, Verbs: append(read, "patch")},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: read}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: shop, Name: "alice-apps"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "apps"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: restricted}}},
	}
	for _, o := range objs {
		if err := k8sClient.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("failed to create %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// browser is a person's browser on a dashboard: it has exchanged the one-time token for the
// cookie and keeps it.
type browser struct {
	t    testing.TB
	base string
	http *http.Client
	srv  *Server
}

// open starts a dashboard with o (the admin's connection unless o.Config is set) and signs in.
func open(t testing.TB, o Options) *browser {
	t.Helper()
	if o.Config == nil {
		o.Config = adminConfig
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.Follow(ctx)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { cancel(); ts.Close() })
	jar, _ := cookiejar.New(nil)
	b := &browser{t: t, base: ts.URL, srv: s, http: &http.Client{Jar: jar}}
	if code, body := b.get("/?token=" + s.Token()); code != http.StatusOK {
		t.Fatalf("signing in with the token answered %d:\n%s", code, body)
	}
	return b
}

// asUser is the admin's connection impersonating a user.
func asUser(name string) *rest.Config {
	cfg := rest.CopyConfig(adminConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: name}
	return cfg
}

func (b *browser) get(path string) (int, string) {
	b.t.Helper()
	resp, err := b.http.Get(b.base + path)
	if err != nil {
		b.t.Fatal(err)
	}
	return readBody(b.t, resp)
}

// post submits a form; it does not follow a redirect, so the test sees the 303.
func (b *browser) post(path string, form url.Values) (int, string) {
	b.t.Helper()
	c := *b.http
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.PostForm(b.base+path, form)
	if err != nil {
		b.t.Fatal(err)
	}
	return readBody(b.t, resp)
}

func readBody(t testing.TB, resp *http.Response) (int, string) {
	t.Helper()
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func contains(t *testing.T, page, what string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(page, w) {
			t.Errorf("%s does not show %q:\n%s", what, w, page)
		}
	}
}

func lacks(t *testing.T, page, what string, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(page, w) {
			t.Errorf("%s shows %q, which it must not:\n%s", what, w, page)
		}
	}
}

func drpc(t *testing.T, ns, name string) *v1alpha1.DRPlacementControl {
	t.Helper()
	d := &v1alpha1.DRPlacementControl{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	return d
}
