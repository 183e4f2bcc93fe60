package gateway

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// closedAddress returns a loopback address nothing listens on.
func closedAddress(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// unreachableRemote returns a gateway holding a client of a cluster whose API server is gone.
func unreachableRemote(t *testing.T) (*Secrets, *remote) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["east"] = &clientcmdapi.Cluster{Server: "http://" + closedAddress(t)}
	kc.AuthInfos["hub"] = &clientcmdapi.AuthInfo{Token: "t"}
	kc.Contexts["east"] = &clientcmdapi.Context{Cluster: "east", AuthInfo: "hub"}
	kc.CurrentContext = "east"
	raw, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	g := NewSecrets(nil, s, Limits{}, "")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "drover-system", Name: "east", UID: "u", ResourceVersion: "1"},
		Data: map[string][]byte{v1alpha1.KubeconfigSecretKey: raw}}
	rm, err := g.newRemote("east", secret)
	if err != nil {
		t.Fatal(err)
	}
	g.clusters["east"] = rm
	t.Cleanup(func() { g.Forget("east") })
	return g, rm
}

func TestReadsOfGroupsFailAtOnceWithWhyTheClusterDoesNotAnswer(t *testing.T) {
	g := NewWithT(t)
	gw, rm := unreachableRemote(t)
	cl := &cachedReads{Client: rm.direct, g: gw, rm: rm}
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "app", Name: "app"}

	err := cl.Get(ctx, key, &v1alpha1.VolumeReplicationGroup{})
	g.Expect(err).To(MatchError(ContainSubstring("cluster east has not answered a probe yet")))

	// The probe fails: the failure is the cluster's health, and reads say so without a request.
	probeErr := Probe(ctx, rm.direct)
	g.Expect(probeErr).To(HaveOccurred())
	gw.observe(rm, probeErr)
	start := time.Now()
	err = cl.Get(ctx, key, &v1alpha1.VolumeReplicationGroup{})
	g.Expect(err).To(MatchError(ContainSubstring("cluster east does not answer")))
	g.Expect(err).To(MatchError(ContainSubstring("connection refused")))
	g.Expect(time.Since(start)).To(BeNumerically("<", 100*time.Millisecond), "the read waits for nothing")
}

func TestAClusterWhoseCacheCannotConnectIsNoLongerAnsweringAndTheHubIsTold(t *testing.T) {
	g := NewWithT(t)
	gw, rm := unreachableRemote(t)
	// Pretend a probe succeeded: the gateway starts the cache, whose list is refused.
	gw.observe(rm, nil)
	select {
	case ev := <-gw.Changes():
		g.Expect(ev.Object).To(BeAssignableToTypeOf(&v1alpha1.DRCluster{}))
		g.Expect(ev.Object.GetName()).To(Equal("east"))
	case <-time.After(10 * time.Second):
		t.Fatal("the hub was not told that east stopped answering")
	}
	gw.mu.Lock()
	answering, watching, err := rm.answering(), rm.watch != nil, rm.err
	gw.mu.Unlock()
	g.Expect(answering).To(BeFalse())
	g.Expect(watching).To(BeFalse(), "the cache of a cluster that does not answer is stopped")
	g.Expect(err).To(MatchError(ContainSubstring("connection refused")))
}

// failingTransport fails every request as a lost cluster does.
type failingTransport struct{}

func (failingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("connect: connection refused")
}

func TestOnlyRequestsThatCannotConnectMarkTheClusterAsNotAnswering(t *testing.T) {
	g := NewWithT(t)
	gw, rm := unreachableRemote(t)
	rm.probed = true
	r := &reporter{next: failingTransport{}, g: gw, rm: rm}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://east/apis", nil)
	g.Expect(err).NotTo(HaveOccurred())
	_, _ = r.RoundTrip(req) //nolint:bodyclose // no response
	g.Expect(rm.answering()).To(BeTrue(), "a request its caller cancelled says nothing about the cluster")

	req, err = http.NewRequestWithContext(context.Background(), http.MethodGet, "http://east/apis", nil)
	g.Expect(err).NotTo(HaveOccurred())
	_, _ = r.RoundTrip(req) //nolint:bodyclose // no response
	gw.mu.Lock()
	defer gw.mu.Unlock()
	g.Expect(rm.answering()).To(BeFalse())
	g.Expect(rm.err).To(MatchError(ContainSubstring("GET http://east/apis: connect: connection refused")))
}
