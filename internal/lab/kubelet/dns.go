package kubelet

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// The lab has no cluster DNS: pods share the machine's resolver. A container here gets instead
// a hosts file at /etc/hosts that its kubelet keeps, as a real kubelet keeps each pod's
// /etc/hosts (kubernetes pkg/kubelet/kubelet_pods.go, managedHostsFileContent: localhost, then
// the pod's IP with its hostname and, with a subdomain, its fully qualified name), with the
// records cluster DNS would answer for the headless Services of the pod's namespace added
// (kubernetes/dns docs/specification.md, as CoreDNS's kubernetes plugin serves them): each
// ready endpoint's IP under the Service's name, and under <hostname>.<service> when the
// endpoint has a hostname (a StatefulSet's pod db-0 behind its Service db is db-0.db). Each
// name is listed in the forms the pod's DNS search path resolves (<ns>.svc.cluster.local,
// svc.cluster.local, cluster.local): db, db.<ns>, db.<ns>.svc, db.<ns>.svc.cluster.local.
// The file is rewritten in place at each sync of the pod (refreshFiles) when its content
// changed, so a lookup sees what DNS would answer within a sync period.
//
// What differs from cluster DNS: only the pod's own namespace's headless Services are listed
// (names of other namespaces and Services with a cluster IP, which the lab does not route, do
// not resolve), and a process that caches its lookups keeps them.

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

// hostsContent is the hosts file of pod, whose IP is ip, given the headless Services and the
// EndpointSlices of its namespace.
func hostsContent(pod *corev1.Pod, ip string, services []*corev1.Service, endpointSlices []*discoveryv1.EndpointSlice) []byte {
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
	headless := map[string]bool{}
	for _, s := range services {
		if s.Spec.ClusterIP == corev1.ClusterIPNone {
			headless[s.Name] = true
		}
	}
	var lines []string
	for _, slice := range endpointSlices {
		svc := slice.Labels[discoveryv1.LabelServiceName]
		if !headless[svc] {
			continue
		}
		for _, ep := range slice.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			for _, addr := range ep.Addresses {
				lines = append(lines, addr+"\t"+strings.Join(searchForms(svc, pod.Namespace), " "))
				if ep.Hostname != nil && *ep.Hostname != "" {
					lines = append(lines, addr+"\t"+strings.Join(searchForms(*ep.Hostname+"."+svc, pod.Namespace), " "))
				}
			}
		}
	}
	slices.Sort(lines)
	for _, l := range slices.Compact(lines) {
		b.WriteString(l + "\n")
	}
	return b.Bytes()
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
	content := hostsContent(pod, w.ip.String(), w.k.namespaceServices(pod.Namespace), w.k.namespaceEndpointSlices(pod.Namespace))
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

// namespaceEndpointSlices lists the EndpointSlices of namespace the kubelet has seen.
func (k *Kubelet) namespaceEndpointSlices(namespace string) []*discoveryv1.EndpointSlice {
	if k.endpointSlices == nil {
		return nil
	}
	out, _ := k.endpointSlices.EndpointSlices(namespace).List(labels.Everything())
	return out
}
