package kubelet

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
	utilexec "k8s.io/utils/exec"
	"k8s.io/utils/ptr"
)

// apiServerKubeletClient is the user of the test API server's --kubelet-client-certificate.
const apiServerKubeletClient = "kube-apiserver-kubelet-client"

// testCA is the CA of the kubelet's serving and client certificates in the tests.
type testCA struct {
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	serial int64
}

var kubeletCA *testCA

func newTestCA() (*testCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubelet-test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &testCA{cert: cert, key: key, serial: 1}, nil
}

// issue signs a new key's certificate of tmpl's subject, names and usages; it returns the PEM of
// both.
func (ca *testCA) issue(tmpl *x509.Certificate) ([]byte, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	ca.serial++
	tmpl.SerialNumber, tmpl.NotBefore, tmpl.NotAfter = big.NewInt(ca.serial), ca.cert.NotBefore, ca.cert.NotAfter
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// clientCert is a client certificate of user, for calling the kubelet directly.
func (ca *testCA) clientCert(user string) (tls.Certificate, error) {
	certPEM, keyPEM, err := ca.issue(&x509.Certificate{Subject: pkix.Name{CommonName: user},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// kubeletPKI makes, in dir, a CA (kubeletCA), the kubelet's serving certificate for 127.0.0.1
// and the API server's kubelet client certificate, and returns the kubelet's Serving and the API
// server's flags that use them, as a cluster's installer (kubeadm's certs phase) sets them up.
func kubeletPKI(dir string) (*Serving, map[string]string, error) {
	ca, err := newTestCA()
	if err != nil {
		return nil, nil, err
	}
	kubeletCA = ca
	servingCert, servingKey, err := ca.issue(&x509.Certificate{Subject: pkix.Name{CommonName: DefaultNodeName},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}})
	if err != nil {
		return nil, nil, err
	}
	clientCert, clientKey, err := ca.issue(&x509.Certificate{Subject: pkix.Name{CommonName: apiServerKubeletClient},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return nil, nil, err
	}
	files := map[string][]byte{"ca.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw}),
		"kubelet-client.crt": clientCert, "kubelet-client.key": clientKey}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, nil, err
		}
	}
	pair, err := tls.X509KeyPair(servingCert, servingKey)
	if err != nil {
		return nil, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return &Serving{Cert: pair, ClientCAs: pool}, map[string]string{
		"kubelet-client-certificate":      filepath.Join(dir, "kubelet-client.crt"),
		"kubelet-client-key":              filepath.Join(dir, "kubelet-client.key"),
		"kubelet-certificate-authority":   filepath.Join(dir, "ca.crt"),
		"kubelet-preferred-address-types": "InternalIP",
	}, nil
}

// allowAPIServerToKubelet binds the API server's kubelet client to system:kubelet-api-admin, the
// role a cluster gives it (kubeadm does) so that kubelets authorize its requests.
func allowAPIServerToKubelet(ctx context.Context) error {
	_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: apiServerKubeletClient},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: apiServerKubeletClient}},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// execResult is what an exec through the API server returned.
type execResult struct {
	stdout, stderr string
	exitCode       int // -1 when the exec failed without an exit code
	err            error
}

// execInPod runs command in a container of a pod through the API server's pods/exec, as kubectl
// exec does (client-go's WebSocket executor, falling back to SPDY when the upgrade is refused);
// spdyOnly uses SPDY alone, as kubectl did before 1.31.
func execInPod(ctx context.Context, ns, pod, container string, spdyOnly bool, command ...string) execResult {
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		return execResult{exitCode: -1, err: err}
	}
	executor := spdy
	if !spdyOnly {
		ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
		if err != nil {
			return execResult{exitCode: -1, err: err}
		}
		if executor, err = remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		}); err != nil {
			return execResult{exitCode: -1, err: err}
		}
	}
	var stdout, stderr bytes.Buffer
	err = executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	res := execResult{stdout: stdout.String(), stderr: stderr.String(), err: err}
	var exit utilexec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		res.exitCode = exit.ExitStatus()
	default:
		res.exitCode = -1
	}
	return res
}

// TestExecThroughTheAPIServerRunsInThePodsContainer execs as kubectl exec does into a pod the lab
// kubelet runs as a process: the command runs in the container's mount namespace (it sees the
// pod's emptyDir, which the machine does not), its PID namespace, working directory, environment
// and user, and the caller gets its stdout, its stderr and its exit code, over WebSocket and over
// SPDY.
func TestExecThroughTheAPIServerRunsInThePodsContainer(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, g)
	mnt := mountPath(ns, "state")
	pod := shellPod(ns, "db", fmt.Sprintf("echo checkpointed > %s/marker; trap 'exit 0' TERM; while :; do sleep 0.2; done", mnt))
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](1000)}
	pod.Spec.Volumes = []corev1.Volume{{Name: "state", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	c := &pod.Spec.Containers[0]
	c.Name, c.WorkingDir = "postgres", mnt
	c.Env = []corev1.EnvVar{{Name: "PGDATA", Value: mnt + "/data"}}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "state", MountPath: mnt}}
	createPod(g, pod)
	g.Eventually(func(g Gomega) {
		got := fetchPod(g, ns, "db")
		g.Expect(got.Status.ContainerStatuses).To(HaveLen(1))
		g.Expect(got.Status.ContainerStatuses[0].State.Running).NotTo(BeNil())
	}).Should(Succeed())

	script := `echo "wd=$(pwd) pgdata=$PGDATA uid=$(id -u) pid1=$(cat /proc/1/comm)"; cat marker; echo to-stderr >&2; exit 3`
	for _, spdyOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("spdyOnly=%t", spdyOnly), func(t *testing.T) {
			g := NewWithT(t)
			var res execResult
			g.Eventually(func(g Gomega) {
				res = execInPod(t.Context(), ns, "db", "postgres", spdyOnly, "sh", "-c", script)
				g.Expect(res.exitCode).To(Equal(3), "stdout %q, stderr %q, err %v", res.stdout, res.stderr, res.err)
			}).Should(Succeed())
			g.Expect(res.stdout).To(Equal(fmt.Sprintf("wd=%s pgdata=%s/data uid=1000 pid1=sh\ncheckpointed\n", mnt, mnt)))
			g.Expect(res.stderr).To(Equal("to-stderr\n"))
			g.Expect(res.err).To(MatchError("command terminated with exit code 3"))
		})
	}
	_, err := os.Stat(filepath.Join(mnt, "marker"))
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "the marker the exec read is in the container's mount namespace only")

	res := execInPod(t.Context(), ns, "db", "postgres", false, "true")
	g.Expect(res.err).NotTo(HaveOccurred())
	g.Expect(res.exitCode).To(BeZero())
	res = execInPod(t.Context(), ns, "db", "redis", false, "true")
	g.Expect(res.err).To(MatchError(ContainSubstring(`container redis is not valid for pod db`)), "the API server checks the container")
}

// TestExecIntoAPodOfAFakeNodeFailsClearly execs into a pod kwok runs on a fake node, which has no
// kubelet to serve it: the API server answers at once that it cannot reach the node, never hangs.
func TestExecIntoAPodOfAFakeNodeFailsClearly(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, g)
	startKwok(t, g)
	_, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: "kwok-exec-1", Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
	}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), "kwok-exec-1", metav1.DeleteOptions{}) })
	fake := probePod(ns, "fake")
	fake.Spec.NodeName = "kwok-exec-1"
	createPod(g, fake)
	g.Eventually(func(g Gomega) {
		g.Expect(fetchPod(g, ns, "fake").Status.Phase).To(Equal(corev1.PodRunning))
	}).Should(Succeed())

	start := time.Now()
	res := execInPod(ctx, ns, "fake", "", false, "true")
	t.Logf("exec into a kwok pod: %v after %s", res.err, time.Since(start).Round(time.Millisecond))
	g.Expect(res.err).To(MatchError(ContainSubstring("no preferred addresses found")),
		"kwok gives its nodes no address (the lab runs it without --node-ip), so the API server says it cannot reach the node")
	g.Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second), "the API server answers at once")
}

// TestKubeletRefusesCallersTheAPIServerWouldNot calls the kubelet's exec endpoint directly, at
// the address and port its Node reports: a caller without a client certificate of the cluster's
// CA is refused by TLS, and one with a certificate whose user may not reach nodes/proxy gets 403,
// so that exec is reachable only as RBAC allows, through the API server.
func TestKubeletRefusesCallersTheAPIServerWouldNot(t *testing.T) {
	g := NewWithT(t)
	node, err := cs.CoreV1().Nodes().Get(t.Context(), DefaultNodeName, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	g.Expect(port).NotTo(BeZero(), "the Node reports the kubelet's port")
	url := fmt.Sprintf("https://127.0.0.1:%d/exec/default/none/c?command=true&output=1", port)
	roots := x509.NewCertPool()
	roots.AddCert(kubeletCA.cert)
	call := func(certs ...tls.Certificate) (*http.Response, error) {
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs, MinVersion: tls.VersionTLS12}}}
		return client.Post(url, "", nil)
	}

	_, err = call()
	g.Expect(err).To(HaveOccurred(), "a caller without a client certificate is refused")

	intruder, err := kubeletCA.clientCert("intruder")
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := call(intruder)
	g.Expect(err).NotTo(HaveOccurred())
	body, _ := io.ReadAll(resp.Body)
	g.Expect(resp.Body.Close()).To(Succeed())
	g.Expect(resp.StatusCode).To(Equal(http.StatusForbidden))
	g.Expect(string(body)).To(ContainSubstring("Forbidden (user=intruder, verb=create, resource=nodes, subresource=proxy)"))
}
