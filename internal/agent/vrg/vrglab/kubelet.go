package vrglab

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/kubelet"
)

// StartKubelet runs a lab kubelet for east in the test, as `drover lab kubelet` does in a lab
// that runs drover (the packages' labs run their agents in-process and no kubelet): it runs the
// pods bound to its node as processes of this machine, the image example.com/lab/shell as
// /bin/sh, and serves pods/exec to east's API server with the lab's kubelet certificates. It
// stops, with its pods' processes, when the test ends.
func StartKubelet(t *testing.T, g gomega.Gomega) {
	c, err := Lab().Cluster(lab.East)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	cfg, err := c.RESTConfig()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	pki := filepath.Join(c.Dir(), "pki")
	cert, err := tls.LoadX509KeyPair(filepath.Join(pki, "kubelet.crt"), filepath.Join(pki, "kubelet.key"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	ca, err := os.ReadFile(filepath.Join(pki, "ca.crt"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	cas := x509.NewCertPool()
	g.Expect(cas.AppendCertsFromPEM(ca)).To(gomega.BeTrue())
	dir := t.TempDir()
	k, err := kubelet.New(kubelet.Options{Config: cfg, Images: map[string]string{"example.com/lab/shell": "/bin/sh"},
		StateDir: filepath.Join(dir, "state"), LogDir: filepath.Join(dir, "logs"), PodCIDR: c.PodCIDR(),
		Serving: &kubelet.Serving{Cert: cert, ClientCAs: cas}})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("lab kubelet: %v", err)
		}
	})
}

// OnKubelet places a pod on the lab kubelet's node (StartKubelet), which runs it as a process
// of this machine, so that an exec runs in it.
func OnKubelet(spec *corev1.PodSpec) {
	spec.NodeSelector = map[string]string{kubelet.NodeLabel: "true"}
	spec.Tolerations = []corev1.Toleration{{Key: kubelet.NodeLabel, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	spec.AutomountServiceAccountToken = ptr.To(false)
	spec.TerminationGracePeriodSeconds = ptr.To[int64](2)
}
