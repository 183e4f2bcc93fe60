package kubelet

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// The lab has no cluster DNS: pods share the machine's resolver. A container here gets instead
// a hosts file at /etc/hosts that its kubelet keeps, as a real kubelet keeps each pod's
// /etc/hosts (kubernetes pkg/kubelet/kubelet_pods.go, managedHostsFileContent: localhost, then
// the pod's IP with its hostname and, with a subdomain, its fully qualified name), with the
// records cluster DNS would answer for the headless Services of the pod's namespace added
// (kubernetes/dns docs/specification.md, as CoreDNS's kubernetes plugin serves them from the
// EndpointSlices): each ready pod the Service selects under the Service's name, and under
// <hostname>.<service> when the pod's hostname is set and its subdomain is the Service (a
// StatefulSet's pod db-0 behind its Service db is db-0.db). Each name is listed in the forms
// the pod's DNS search path resolves (<ns>.svc.cluster.local, svc.cluster.local,
// cluster.local): db, db.<ns>, db.<ns>.svc, db.<ns>.svc.cluster.local. The pods are read
// directly rather than from EndpointSlices, which the API server refuses for the lab's loopback
// pod IPs ("may not be in the loopback range"), as the EndpointSlice controller selects them
// (pkg/controller/endpointslice: the selector, a pod IP, Ready unless the Service publishes
// not-ready addresses, not being deleted). The file is rewritten in place at each sync of the
// pod (refreshFiles) when its content changed, so a lookup sees what DNS would answer within a
// sync period.
//
// What differs from cluster DNS: only this node's pods are listed (those on kwok's nodes run
// nothing to reach), only the pod's own namespace's headless Services (names of other
// namespaces and Services with a cluster IP, which the lab does not route, do not resolve), and
// a process that caches its lookups keeps them.

// clusterDomain is the lab's cluster domain, a kubelet's default --cluster-domain.
const clusterDomain = "cluster.local"

// hostsMountPath is where a container finds its hosts file.
const hostsMountPath = "/etc/hosts"

// hostsHeader is what a real kubelet's managed hosts file starts with.
const hostsHeader = `# Kubernetes-managed hosts file (the lab kubelet's, with its namespace's headless Services).
127.0.0.1	localhost
::1	localhost ip6-localhost ip6-loopback
fe00::0	ip6-localnet
fe00::0	ip6-mcastprefix
fe00::1	ip6-allnodes
fe00::2	ip6-allrouters
`

// hostsContent is the hosts file of pod, whose IP is ip, given the Services and this node's pods
// of its namespace.
func hostsContent(pod *corev1.Pod, ip string, services []*corev1.Service, pods []*corev1.Pod) []byte {
	var b bytes.Buffer
	b.WriteString(hostsHeader)
	hostname := pod.Spec.Hostname
	if hostname == "" {
		hostname = pod.Name
	}
	if pod.Spec.Subdomain != "" {
		fmt.Fprintf(&b, "%s\t%s.%s.%s.svc.%s\t%s\n", ip, hostname, pod.Spec.Subdomain, pod.Namespace, clusterDomain, hostname)
	} else {
		fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
	}
	var lines []string
	for _, svc := range services {
		if svc.Spec.ClusterIP != corev1.ClusterIPNone || len(svc.Spec.Selector) == 0 {
			continue
		}
		selector := labels.SelectorFromSet(svc.Spec.Selector)
		for _, p := range pods {
			answered := svc.Spec.PublishNotReadyAddresses || PodReady(p)
			if !answered || !selector.Matches(labels.Set(p.Labels)) || p.Status.PodIP == "" || p.DeletionTimestamp != nil {
				continue
			}
			lines = append(lines, p.Status.PodIP+"\t"+strings.Join(searchForms(svc.Name, pod.Namespace), " "))
			if p.Spec.Hostname != "" && p.Spec.Subdomain == svc.Name {
				lines = append(lines, p.Status.PodIP+"\t"+strings.Join(searchForms(p.Spec.Hostname+"."+svc.Name, pod.Namespace), " "))
			}
		}
	}
	slices.Sort(lines)
	for _, l := range slices.Compact(lines) {
		b.WriteString(l + "\n")
	}
	return b.Bytes()
}

// PodReady says whether the pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// searchForms are the names under which name, a Service's (or an endpoint's below it), resolves
// in namespace: fully qualified first, then as the search path completes it.
func searchForms(name, namespace string) []string {
	return []string{name + "." + namespace + ".svc." + clusterDomain, name + "." + namespace + ".svc", name + "." + namespace, name}
}

// hostsPath is the pod's hosts file on this machine.
func (w *podWorker) hostsPath() string { return filepath.Join(w.dir, "etc-hosts") }

// writeHosts writes the pod's hosts file when its content changed, in place, so that the
// containers' binds of it see the new content.
func (w *podWorker) writeHosts() error {
	pod := w.currentPod()
	content := hostsContent(pod, w.ip.String(), w.k.namespaceServices(pod.Namespace), w.k.namespacePods(pod.Namespace))
	if old, err := os.ReadFile(w.hostsPath()); err == nil && bytes.Equal(old, content) {
		return nil
	}
	if err := os.WriteFile(w.hostsPath(), content, 0o644); err != nil { //nolint:gosec // a hosts file every container's user reads
		return fmt.Errorf("failed to write the hosts file of pod %s: %w", w.key, err)
	}
	return nil
}

// hostsMount is the bind of the pod's hosts file at /etc/hosts (refreshFiles wrote it before
// the containers start; written here only when missing); none for a pod on the host's network,
// which sees the machine's own, as on a real node.
func (w *podWorker) hostsMount() ([]mount, error) {
	if w.currentPod().Spec.HostNetwork {
		return nil, nil
	}
	if _, err := os.Stat(w.hostsPath()); err != nil {
		if err := w.writeHosts(); err != nil {
			return nil, err
		}
	}
	return []mount{{source: w.hostsPath(), target: hostsMountPath, readOnly: true}}, nil
}

// namespaceServices lists the Services of namespace the kubelet has seen.
func (k *Kubelet) namespaceServices(namespace string) []*corev1.Service {
	if k.services == nil {
		return nil
	}
	out, _ := k.services.Services(namespace).List(labels.Everything())
	return out
}

// namespacePods lists the pods of namespace on this node.
func (k *Kubelet) namespacePods(namespace string) []*corev1.Pod {
	if k.pods == nil {
		return nil
	}
	out, _ := k.pods.Pods(namespace).List(labels.Everything())
	return out
}
