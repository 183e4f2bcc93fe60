package lab_test

import (
	"bytes"
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/drover-io/drover/internal/lab"
)

// TestExecThroughEachClustersAPIServerRunsInDroversPod execs, as kubectl exec does, through each
// cluster's API server into drover's pod, which that cluster's lab kubelet runs as a process: the
// API server reaches the kubelet at its Node's address and port over TLS checked both ways
// against the cluster's CA (pki.go), and the command runs in the container, as its user, with
// the pod's ServiceAccount volume mounted.
func TestExecThroughEachClustersAPIServerRunsInDroversPod(t *testing.T) {
	g := newG(t)
	ctx := context.Background()
	for _, name := range []string{lab.Hub, lab.East, lab.West} {
		pod := readyPod(ctx, g, name)
		cfg, err := cluster(g, name).RESTConfig()
		g.Expect(err).NotTo(HaveOccurred())
		cs, err := kubernetes.NewForConfig(cfg)
		g.Expect(err).NotTo(HaveOccurred())
		req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("exec").
			VersionedParams(&corev1.PodExecOptions{
				Container: pod.Spec.Containers[0].Name, Stdout: true, Stderr: true,
				Command: []string{"sh", "-c", "cat /var/run/secrets/kubernetes.io/serviceaccount/namespace; echo; id -u"},
			}, scheme.ParameterCodec)
		exec, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
		g.Expect(err).NotTo(HaveOccurred())
		var stdout, stderr bytes.Buffer
		g.Expect(exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})).
			To(Succeed(), "exec into %s on %s; stderr: %s", pod.Name, name, stderr.String())
		g.Expect(stdout.String()).To(Equal(lab.DroverNamespace+"\n65532\n"), "on %s", name)
	}
}
