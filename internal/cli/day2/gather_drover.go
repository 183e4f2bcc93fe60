package day2

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/cli"
)

// logTailLines is how many lines of each container's log gather keeps.
const logTailLines = 5000

// drover gathers drover's Deployments and pods in drover-system and their logs. Where no pod
// can be read (drover runs as processes, as in the lab, or the credential may not read pods),
// a file says so instead.
func (g *gathering) drover(ctx context.Context, cluster string, cl client.Client, cfg *rest.Config, forbidden func(string) string) {
	for _, gvk := range droverKinds {
		g.listOrExplain(ctx, cl, cluster, droverNamespace, gvk, nil, forbidden)
	}
	logs := cluster + "/logs/README.txt"
	pods := &corev1.PodList{}
	if err := cl.List(ctx, pods, client.InNamespace(droverNamespace)); err != nil {
		g.files[logs] = fmt.Appendf(nil, "drover's logs were not collected: its pods could not be listed: %v\n", err)
		return
	}
	if len(pods.Items) == 0 {
		g.files[logs] = []byte("No pod runs in " + droverNamespace + ", so drover's logs cannot be read through the API: drover may run\n" +
			"as processes here (as in the lab, whose logs are in its directory: drover lab status) or not at all.\n")
		return
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		g.files[logs] = fmt.Appendf(nil, "drover's logs were not collected: %v\n", err)
		return
	}
	var notes []string
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			name := fmt.Sprintf("%s/logs/%s_%s.log", cluster, p.Name, c.Name)
			tail := int64(logTailLines)
			lctx, cancel := context.WithTimeout(ctx, 2*remoteTimeout)
			raw, err := cs.CoreV1().Pods(droverNamespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: c.Name, TailLines: &tail}).DoRaw(lctx)
			cancel()
			if err != nil {
				notes = append(notes, fmt.Sprintf("%s %s: %v", p.Name, c.Name, err))
				continue
			}
			g.files[name] = raw
		}
	}
	if len(notes) > 0 {
		g.files[logs] = []byte("These logs could not be read (in the lab, a pod's log is in the lab kubelet's directory):\n" +
			strings.Join(notes, "\n") + "\n")
	}
}

// readme writes README.md: what was gathered, from where, with which credential, and what not.
func (g *gathering) readme(o GatherOptions, at time.Time, clusters []*managedCluster, namespaces []string) {
	var b strings.Builder
	fmt.Fprintf(&b, "# drover gather\n\nGathered at %s", at.UTC().Format(time.RFC3339))
	if o.App != "" {
		fmt.Fprintf(&b, " for the application %s/%s", o.Namespace, o.App)
	}
	fmt.Fprintf(&b, ".\n\nNamespaces of the applications: %s.\n\n## Clusters\n\n- hub: with your kubeconfig\n", cli.Dash(strings.Join(namespaces, ", ")))
	for _, m := range clusters {
		fmt.Fprintf(&b, "- %s: with %s\n", m.name, m.via)
	}
	b.WriteString("\n## Secrets\n\nSecrets are listed by name, type and key names; each value reads `<redacted> (N bytes)`. Every value\n" +
		"of every Secret read, the credentials inside kubeconfigs and those of the clients used are\n" +
		"replaced with `<redacted>` in every file, logs and events included.\n\n## Files\n\n")
	names := make([]string, 0, len(g.files))
	for n := range g.files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	b.WriteString("\n## Not collected\n\n")
	if len(g.failures) == 0 {
		b.WriteString("Nothing: everything asked for was collected.\n")
	}
	for _, f := range g.failures {
		fmt.Fprintf(&b, "- %s\n", f)
	}
	g.files["README.md"] = []byte(b.String())
}
