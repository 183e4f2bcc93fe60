package lab_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/drover-io/drover/internal/lab"
)

// An audited lab's API server logs every request with its client: the test's own request under
// its user agent, and drover's agent under its ServiceAccount.
func TestAnAuditedAPIServerNamesTheClientOfEachRequest(t *testing.T) {
	east, err := testLab.Cluster(lab.East)
	if err != nil {
		t.Fatal(err)
	}
	if !east.Audited() {
		t.Fatal("the suite's lab asked for audit logs, but east is not audited")
	}
	cfg, err := east.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.UserAgent = "audit-probe/1.0"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now().Add(-time.Second)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "audit-probe-"}}
	created, err := cs.CoreV1().ConfigMaps("default").Create(t.Context(), cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().ConfigMaps("default").Delete(t.Context(), created.Name, metav1.DeleteOptions{})
	})
	var probe, agent int
	clients := map[string]int{}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && (probe == 0 || agent == 0) {
		time.Sleep(time.Second)
		counts, err := lab.AuditCounts(east.AuditLogPath(), began, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		probe, agent = 0, 0
		clear(clients)
		for _, c := range counts {
			clients[c.Client] += c.N
			switch {
			case c.Verb == "create" && c.Resource == "configmaps" && c.Client == "lab-admin audit-probe":
				probe += c.N
			case strings.HasPrefix(c.Client, "system:serviceaccount:"+lab.DroverNamespace+":drover-agent drover"):
				agent += c.N
			}
		}
	}
	if probe != 1 || agent == 0 {
		t.Fatalf("want the probe's one create and some requests of the agent in %s; got %d and %d, by client %v", east.AuditLogPath(), probe, agent, clients)
	}
}
