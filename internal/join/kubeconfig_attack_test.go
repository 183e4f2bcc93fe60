package join_test

import (
	"bytes"
	"context"
	"encoding/pem"
	"maps"
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

// The kubeconfig Secrets of the hub hold the hub's credential for each cluster; whoever may
// write a Secret in the hub's namespace (the hub's own ServiceAccount may patch drover-system's)
// may plant one, and a DRCluster naming it. `drover cluster join` (sharing a profile with the
// clusters joined before) and `rotate-store-key` never read them: they reach every joined
// cluster with a kubeconfig of the operator's, and refuse, naming the cluster and the flag,
// when the operator gave none. A planted Secret's plugin never runs on the operator's
// workstation, its tokenFile is never read, its server receives nothing, and nothing is
// written anywhere.
func TestAKubeconfigSecretOnTheHubCannotMakeTheOperatorsWorkstationRunOrSendAnything(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "the-plugin-ran")
	operatorToken := filepath.Join(dir, "operator-token")
	if err := os.WriteFile(operatorToken, []byte("the-operators-own-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	mustJoin(t, joinOptions(t, lab.East, lab.East, &out))
	evil := newRecorder(t)
	plantCluster(t, "mallory-exec", join.DefaultNamespace, evil.kubeconfigTo(t, &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh", Args: []string{"-c", "touch " + marker},
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}}))
	plantCluster(t, "mallory-file", join.DefaultNamespace, evil.kubeconfigTo(t, &clientcmdapi.AuthInfo{TokenFile: operatorToken}))
	plantCluster(t, "mallory-ns", "team-mallory", evil.kubeconfigTo(t, &clientcmdapi.AuthInfo{Token: "a-token-of-malloys"}))
	eastBefore, hubBefore := labelled(t, lab.East, lab.East), labelled(t, lab.Hub, lab.East)

	out.Reset()
	err := join.Join(t.Context(), joinOptions(t, lab.West, lab.West, &out))
	t.Logf("join west: %v\n%s", err, out.String())
	mustContain(t, errString(err), "no kubeconfig for joined cluster(s) mallory-exec, mallory-file, mallory-ns",
		"--peer-kubeconfig mallory-exec=FILE --peer-kubeconfig mallory-file=FILE --peer-kubeconfig mallory-ns=FILE")
	if got := labelled(t, lab.West, lab.West); len(got) > 0 {
		t.Errorf("the refused join wrote on west: %v", got)
	}
	if got := labelled(t, lab.Hub, lab.West); len(got) > 0 {
		t.Errorf("the refused join wrote on the hub: %v", got)
	}

	out.Reset()
	err = join.RotateStoreKey(t.Context(), rotateOptions(t, profileName(lab.East), &out))
	t.Logf("rotate-store-key: %v\n%s", err, out.String())
	mustContain(t, errString(err), "no kubeconfig for joined cluster(s) mallory-exec, mallory-file, mallory-ns",
		"--cluster-kubeconfig mallory-exec=FILE")
	if after := labelled(t, lab.East, lab.East); !maps.Equal(after, eastBefore) {
		t.Errorf("the refused rotation changed east's objects: %v, before %v", after, eastBefore)
	}
	if after := labelled(t, lab.Hub, lab.East); !maps.Equal(after, hubBefore) {
		t.Errorf("the refused rotation changed the hub's objects: %v, before %v", after, hubBefore)
	}

	if _, err := os.Stat(marker); err == nil {
		t.Error("the exec plugin of a kubeconfig Secret ran on the operator's workstation")
	}
	if got := evil.received(); len(got) > 0 {
		t.Errorf("the attacker's server received %d requests: %s", len(got), strings.Join(got, "; "))
	}
}
