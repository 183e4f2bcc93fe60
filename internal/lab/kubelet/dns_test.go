package kubelet

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestHostsFileResolvesTheNamespacesHeadlessServicesAsClusterDNSWould(t *testing.T) {
	g := NewWithT(t)
	check := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "check-x7"}}
	services := []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.7"}},
	}
	slice := func(svc string, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: svc + "-abc",
			Labels: map[string]string{discoveryv1.LabelServiceName: svc}}, Endpoints: eps}
	}
	slices := []*discoveryv1.EndpointSlice{
		slice("db",
			discoveryv1.Endpoint{Addresses: []string{"127.100.0.5"}, Hostname: ptr.To("db-0"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			discoveryv1.Endpoint{Addresses: []string{"127.100.0.6"}, Hostname: ptr.To("db-1"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}}),
		slice("web", discoveryv1.Endpoint{Addresses: []string{"127.100.0.9"}}),
	}
	hosts := string(hostsContent(check, "127.100.0.8", services, slices))
	g.Expect(hosts).To(HavePrefix(hostsHeader), "localhost first, as a kubelet's managed hosts file")
	g.Expect(hosts).To(ContainSubstring("127.100.0.8\tcheck-x7\n"), "the pod's own name")
	g.Expect(hosts).To(ContainSubstring("127.100.0.5\tdb.shop.svc.cluster.local db.shop.svc db.shop db\n"), "the headless Service's ready endpoint")
	g.Expect(hosts).To(ContainSubstring("127.100.0.5\tdb-0.db.shop.svc.cluster.local db-0.db.shop.svc db-0.db.shop db-0.db\n"), "the StatefulSet pod's own name")
	g.Expect(hosts).NotTo(ContainSubstring("127.100.0.6"), "an endpoint that is not ready is not answered")
	g.Expect(hosts).NotTo(ContainSubstring("web"), "a Service with a cluster IP, which the lab does not route, does not resolve")

	db0 := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db-0"}, Spec: corev1.PodSpec{Hostname: "db-0", Subdomain: "db"}}
	own := string(hostsContent(db0, "127.100.0.5", nil, nil))
	g.Expect(strings.TrimPrefix(own, hostsHeader)).To(Equal("127.100.0.5\tdb-0.db.shop.svc.cluster.local\tdb-0\n"), "a pod with a subdomain gets its fully qualified name")
}
