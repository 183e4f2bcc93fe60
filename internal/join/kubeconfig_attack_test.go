package join_test

import (
	"bytes"
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/join"
	"github.com/drover-io/drover/internal/lab"
)

// recorder is an API server of the attacker's: it answers nothing useful and keeps the
// Authorization header of every request it receives.
type recorder struct {
	srv  *httptest.Server
	mu   sync.Mutex
	auth []string
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.auth = append(r.auth, req.Method+" "+req.URL.Path+" "+req.Header.Get("Authorization"))
		r.mu.Unlock()
		http.Error(w, "no", http.StatusNotFound)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *recorder) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auth...)
}

// kubeconfigTo is a kubeconfig for the recorder whose user is user.
func (r *recorder) kubeconfigTo(t *testing.T, user *clientcmdapi.AuthInfo) []byte {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: r.srv.URL, CertificateAuthorityData: ca}
	kc.AuthInfos["u"] = user
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	raw, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// plantCluster writes, with the hub's administrator rights (standing for whoever may write
// Secrets in a namespace of the hub: the hub's own ServiceAccount may patch drover-system's),
// a DRCluster labelled as join labels its own, whose kubeconfig Secret in namespace holds raw.
func plantCluster(t *testing.T, name, namespace string, raw []byte) {
	t.Helper()
	hub := adminClient(t, lab.Hub)
	ctx := t.Context()
	if namespace != join.DefaultNamespace {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
		if err := hub.Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "kubeconfig-" + name},
		Data: map[string][]byte{v1alpha1.KubeconfigSecretKey: raw}}
	drc := &v1alpha1.DRCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{join.LabelManagedBy: join.ManagedByValue, join.LabelCluster: name}},
		Spec: v1alpha1.DRClusterSpec{KubeconfigSecretRef: v1alpha1.SecretRef{Namespace: namespace, Name: secret.Name},
			S3ProfileName: "s3-" + name, Region: "lab-1"},
	}
	for _, o := range []client.Object{secret, drc} {
		if err := hub.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, o := range []client.Object{drc, secret} {
			_ = hub.Delete(context.Background(), o)
		}
	})
}

// The kubeconfig Secrets of the hub are read by the CLI on an operator's workstation, when
// `drover cluster join` shares a profile with the clusters joined before and when
// `rotate-store-key` writes the keys to every cluster. Whoever may write a Secret in the hub's
// namespace (the hub's own ServiceAccount may patch drover-system's) must not make that
// workstation run a command, send the operator's files away, or read a Secret of another
// namespace as a kubeconfig: each such Secret is refused, naming the field, and its server
// receives nothing.
func TestAKubeconfigSecretOnTheHubCannotMakeTheOperatorsWorkstationRunOrSendAnything(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "the-plugin-ran")
	operatorToken := filepath.Join(dir, "operator-token")
	if err := os.WriteFile(operatorToken, []byte("the-operators-own-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	evil := newRecorder(t)
	plantCluster(t, "mallory-exec", join.DefaultNamespace, evil.kubeconfigTo(t, &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh", Args: []string{"-c", "touch " + marker},
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}}))
	plantCluster(t, "mallory-file", join.DefaultNamespace, evil.kubeconfigTo(t, &clientcmdapi.AuthInfo{TokenFile: operatorToken}))
	plantCluster(t, "mallory-ns", "team-mallory", evil.kubeconfigTo(t, &clientcmdapi.AuthInfo{Token: "a-token-of-malloys"}))

	var out bytes.Buffer
	mustJoin(t, joinOptions(t, lab.East, lab.East, &out))
	t.Logf("join east:\n%s", out.String())
	mustContain(t, out.String(),
		"cluster mallory-exec did not get the credentials", "users[u].user.exec",
		"cluster mallory-file did not get the credentials", "users[u].user.tokenFile",
		"cluster mallory-ns did not get the credentials", "team-mallory/kubeconfig-mallory-ns of DRCluster mallory-ns is not in drover-system")

	out.Reset()
	err := join.RotateStoreKey(t.Context(), rotateOptions(t, profileName(lab.East), &out))
	t.Logf("rotate-store-key: %v\n%s", err, out.String())
	if err == nil {
		t.Fatal("the rotation went on with clusters whose kubeconfig Secret was refused")
	}
	mustContain(t, err.Error(), "cluster mallory-exec", "users[u].user.exec", "cluster mallory-file", "users[u].user.tokenFile",
		"cluster mallory-ns", "is not in drover-system")

	if _, err := os.Stat(marker); err == nil {
		t.Error("the exec plugin of a kubeconfig Secret ran on the operator's workstation")
	}
	if got := evil.received(); len(got) > 0 {
		t.Errorf("the attacker's server received %d requests: %s", len(got), strings.Join(got, "; "))
	}
}
