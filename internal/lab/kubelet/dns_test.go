package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestHostsFileResolvesTheNamespacesHeadlessServicesAsClusterDNSWould(t *testing.T) {
	g := NewWithT(t)
	check := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "check-x7"}}
	app := map[string]string{"app": "db"}
	services := []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: app}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.7", Selector: app}},
	}
	member := func(name, ip string, ready corev1.ConditionStatus) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: app},
			Spec:   corev1.PodSpec{Hostname: name, Subdomain: "db"},
			Status: corev1.PodStatus{PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}}}
	}
	other := member("cache-0", "127.100.0.4", corev1.ConditionTrue)
	other.Labels = map[string]string{"app": "cache"}
	pods := []*corev1.Pod{member("db-0", "127.100.0.5", corev1.ConditionTrue), member("db-1", "127.100.0.6", corev1.ConditionFalse), other}
	hosts := string(hostsContent(check, "127.100.0.8", services, pods))
	g.Expect(hosts).To(HavePrefix(hostsHeader), "localhost first, as a kubelet's managed hosts file")
	g.Expect(hosts).To(ContainSubstring("127.100.0.8\tcheck-x7\n"), "the pod's own name")
	g.Expect(hosts).To(ContainSubstring("127.100.0.5\tdb.shop.svc.cluster.local db.shop.svc db.shop db\n"), "the headless Service's ready pod")
	g.Expect(hosts).To(ContainSubstring("127.100.0.5\tdb-0.db.shop.svc.cluster.local db-0.db.shop.svc db-0.db.shop db-0.db\n"), "the StatefulSet pod's own name")
	g.Expect(hosts).NotTo(ContainSubstring("127.100.0.6"), "a pod that is not ready is not answered")
	g.Expect(hosts).NotTo(ContainSubstring("127.100.0.4"), "a pod the Service does not select is not answered")
	g.Expect(hosts).NotTo(ContainSubstring("web"), "a Service with a cluster IP, which the lab does not route, does not resolve")

	services[0].Spec.PublishNotReadyAddresses = true
	g.Expect(string(hostsContent(check, "127.100.0.8", services, pods))).To(ContainSubstring("127.100.0.6\tdb-1.db.shop.svc.cluster.local"),
		"a Service that publishes not-ready addresses answers them")

	db0 := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db-0"}, Spec: corev1.PodSpec{Hostname: "db-0", Subdomain: "db"}}
	own := string(hostsContent(db0, "127.100.0.5", nil, nil))
	g.Expect(strings.TrimPrefix(own, hostsHeader)).To(Equal("127.100.0.5\tdb-0.db.shop.svc.cluster.local\tdb-0\n"), "a pod with a subdomain gets its fully qualified name")
}

// A pod resolves a StatefulSet pod's name under its headless Service (db-0.db), as cluster DNS
// answers it, through the hosts file its kubelet keeps, and sees a pod that became ready since
// it started.
func TestAPodResolvesItsNamespacesHeadlessServiceThroughItsHostsFile(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, g)
	app := map[string]string{"app": "db"}
	_, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: app, Ports: []corev1.ServicePort{{Port: 5432}}}},
		metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	member := func(name string) *corev1.Pod {
		p := shellPod(ns, name, "exec sleep 300")
		p.Labels, p.Spec.Hostname, p.Spec.Subdomain = app, name, "db"
		return p
	}
	createPod(g, member("db-0"))
	db0 := readyPod(g, ns, "db-0")
	script := `wait_for() { i=0; until getent hosts "$1" | grep -q "^$2 "; do i=$((i+1)); [ $i -lt 150 ] || exit 1; sleep 0.2; done; }
wait_for db-0.db "$DB0"; first=$(getent hosts db-0.db)
touch "$MARK"
wait_for db-1.db '127[.0-9]*'; echo "$first / $(getent hosts db-1.db)" > /dev/termination-log`
	mark := filepath.Join(testTmp, ns+".resolved")
	t.Cleanup(func() { _ = os.Remove(mark) })
	client := shellPod(ns, "client", script)
	client.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "DB0", Value: db0.Status.PodIP}, {Name: "MARK", Value: mark}}
	client.Spec.RestartPolicy = corev1.RestartPolicyNever
	createPod(g, client)
	g.Eventually(func() error { _, err := os.Stat(mark); return err }).Should(Succeed(), "the pod resolved db-0.db")
	createPod(g, member("db-1"))
	db1 := readyPod(g, ns, "db-1")
	var message string
	g.Eventually(func(g Gomega) {
		got := fetchPod(g, ns, "client")
		g.Expect(got.Status.Phase).To(Equal(corev1.PodSucceeded))
		message = got.Status.ContainerStatuses[0].State.Terminated.Message
	}).Should(Succeed())
	t.Logf("the pod resolved: %s", message)
	q := regexp.QuoteMeta
	g.Expect(message).To(MatchRegexp(`^%s +%s / %s +%s\n$`,
		q(db0.Status.PodIP), q(strings.Join(searchForms("db-0.db", ns), " ")), q(db1.Status.PodIP), q(strings.Join(searchForms("db-1.db", ns), " "))))
}
