package config_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// startTimeout bounds the wait for a process run from a Deployment to become ready: the agent
// makes its certificate, waits for the files (the rotator backs off by seconds) and injects it.
const startTimeout = 90 * time.Second

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the ServiceAccount of d,
// with a token from the TokenRequest API, as a kubelet gives a pod.
func serviceAccountKubeconfig(ctx context.Context, t *testing.T, g Gomega, d *appsv1.Deployment) string {
	cs, err := kubernetes.NewForConfig(adminConfig)
	g.Expect(err).NotTo(HaveOccurred())
	tr, err := cs.CoreV1().ServiceAccounts(d.Namespace).CreateToken(ctx, d.Spec.Template.Spec.ServiceAccountName,
		&authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: adminConfig.Host, CertificateAuthorityData: adminConfig.CAData}
	cfg.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "sa"}
	cfg.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(clientcmd.WriteToFile(*cfg, path)).To(Succeed())
	return path
}

func freePort(g Gomega) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// podEnv resolves the container's environment as a kubelet does: the downward API's namespace
// and ConfigMap keys.
func podEnv(ctx context.Context, g Gomega, d *appsv1.Deployment) []string {
	var env []string
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		value := e.Value
		switch {
		case e.ValueFrom == nil:
		case e.ValueFrom.FieldRef != nil:
			g.Expect(e.ValueFrom.FieldRef.FieldPath).To(Equal("metadata.namespace"))
			value = d.Namespace
		case e.ValueFrom.ConfigMapKeyRef != nil:
			cm := &corev1.ConfigMap{}
			g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: e.ValueFrom.ConfigMapKeyRef.Name}, cm)).To(Succeed())
			value = cm.Data[e.ValueFrom.ConfigMapKeyRef.Key]
		default:
			g.Expect(e.ValueFrom).To(BeNil(), "an environment source this test does not resolve")
		}
		env = append(env, e.Name+"="+value)
	}
	return env
}

// runDeployment runs drover with the Deployment's arguments and environment, as its
// ServiceAccount, on loopback ports, the fence's certificate directory being certDir. It
// returns the readiness probe's URL and the path of the process's log; the process is stopped
// when the test ends.
func runDeployment(ctx context.Context, t *testing.T, g Gomega, d *appsv1.Deployment, certDir string) (readyz, log string) {
	probe := fmt.Sprintf("127.0.0.1:%d", freePort(g))
	args := []string{}
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		switch {
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			a = "--health-probe-bind-address=" + probe
		case strings.HasPrefix(a, "--metrics-bind-address="):
			a = "--metrics-bind-address=0"
		case strings.HasPrefix(a, "--webhook-address="):
			a = "--webhook-address=127.0.0.1:0"
		case strings.HasPrefix(a, "--webhook-cert-dir="):
			a = "--webhook-cert-dir=" + certDir
		}
		args = append(args, a)
	}
	args = append(args, "--kubeconfig="+serviceAccountKubeconfig(ctx, t, g, d))
	logs, err := os.Create(filepath.Join(t.TempDir(), d.Name+".log"))
	g.Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(drover, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = podEnv(ctx, g, d), logs, logs
	g.Expect(cmd.Start()).To(Succeed())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			raw, _ := os.ReadFile(logs.Name())
			t.Logf("%s's log:\n%s", d.Name, raw)
		}
	})
	return "http://" + probe + "/readyz", logs.Name()
}

func ready(g Gomega, url string) {
	resp, err := http.Get(url) //nolint:gosec // a loopback URL the test made
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
}

// mountSecret copies a Secret's keys into dir while ctx lasts, as a kubelet keeps a Secret
// volume up to date.
func mountSecret(ctx context.Context, key client.ObjectKey, dir string) {
	for ctx.Err() == nil {
		s := &corev1.Secret{}
		if err := cl.Get(ctx, key, s); err == nil {
			for _, name := range []string{"tls.key", "ca.crt", "tls.crt"} {
				if data, ok := s.Data[name]; ok {
					_ = os.WriteFile(filepath.Join(dir, name), data, 0o600)
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func leaseHeld(ctx context.Context, g Gomega, name string) {
	lease := &coordinationv1.Lease{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: "drover-system", Name: name}, lease)).To(Succeed())
	g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
}

// TestReleaseDeploymentsRunAsTheirServiceAccounts runs the hub and the agent as their
// Deployments say, with their ServiceAccounts' tokens, so that a rule missing from the RBAC of
// the manifests fails here: both win their leader election, and the agent makes the fence's
// certificate, injects its CA and turns ready. Applying the manifests again afterwards changes
// nothing the agent wrote.
func TestReleaseDeploymentsRunAsTheirServiceAccounts(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(startTimeout)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	hubManifests, agentManifests := build(g, "hub"), build(g, "agent")
	kubectlApply(t, g, hubManifests)
	kubectlApply(t, g, agentManifests)
	g.Expect(client.IgnoreAlreadyExists(cl.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "drover-system", Name: "drover-agent"},
		Data:       map[string]string{"cluster-name": "east"},
	}))).To(Succeed())

	hubReady, hubLog := runDeployment(ctx, t, g, deployments(g, objects(g, hubManifests))[0], "")
	certDir := t.TempDir()
	go mountSecret(ctx, client.ObjectKey{Namespace: "drover-system", Name: "drover-fence-cert"}, certDir)
	agentReady, agentLog := runDeployment(ctx, t, g, deployments(g, objects(g, agentManifests))[0], certDir)

	g.Eventually(func(g Gomega) { ready(g, hubReady) }).Should(Succeed())
	g.Eventually(func(g Gomega) { leaseHeld(ctx, g, "drover-hub.drover.io") }).Should(Succeed())
	g.Eventually(func(g Gomega) { ready(g, agentReady) }).Should(Succeed())
	g.Eventually(func(g Gomega) { leaseHeld(ctx, g, "drover-agent.drover.io") }).Should(Succeed())

	secret := &corev1.Secret{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: "drover-system", Name: "drover-fence-cert"}, secret)).To(Succeed())
	g.Expect(secret.Data).To(HaveKey("tls.crt"))
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Name: "drover-fence"}, vwc)).To(Succeed())
	g.Expect(vwc.Webhooks[0].ClientConfig.CABundle).To(Equal(secret.Data["ca.crt"]))

	objs := objects(g, agentManifests)
	before := resourceVersions(ctx, g, objs)
	kubectlApply(t, g, agentManifests)
	g.Expect(resourceVersions(ctx, g, objs)).To(Equal(before), "applying the manifests again changed what the agent wrote")

	for _, log := range []string{hubLog, agentLog} {
		raw, err := os.ReadFile(log)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(raw)).NotTo(ContainSubstring("forbidden"), "a request of %s was refused by RBAC", log)
	}
}
