package hubless

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/cli"
)

// Cluster is a managed cluster reached with its own kubeconfig.
type Cluster struct {
	// Name is the cluster's name as the DRPolicy knows it: NAME of NAME=FILE, else the
	// kubeconfig's current context.
	Name string
	// Kubeconfig is the kubeconfig file.
	Kubeconfig string
	// named is true when the person named it (NAME=FILE).
	named bool
}

// ParseClusters reads --cluster-kubeconfig values, each FILE or NAME=FILE.
func ParseClusters(values []string) ([]Cluster, error) {
	out := make([]Cluster, 0, len(values))
	seen := map[string]bool{}
	for _, v := range values {
		c := Cluster{Kubeconfig: v}
		if name, file, ok := strings.Cut(v, "="); ok && name != "" && !strings.ContainsAny(name, "/\\") {
			c = Cluster{Name: name, Kubeconfig: file, named: true}
		}
		if c.Kubeconfig == "" {
			return nil, cli.Usage(fmt.Errorf("--cluster-kubeconfig %q names no file: give FILE or NAME=FILE", v))
		}
		if !c.named {
			raw, err := clientcmd.LoadFromFile(c.Kubeconfig)
			if err != nil {
				return nil, cli.Usage(fmt.Errorf("failed to read kubeconfig %s: %w", c.Kubeconfig, err))
			}
			c.Name = raw.CurrentContext
		}
		if seen[c.Name] {
			return nil, cli.Usage(fmt.Errorf("--cluster-kubeconfig names cluster %q twice: name each NAME=FILE", c.Name))
		}
		seen[c.Name] = true
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, cli.Usage(errors.New("no --cluster-kubeconfig given: pass the kubeconfig of each managed cluster to read, as FILE or NAME=FILE"))
	}
	return out, nil
}

// Client returns a client of the cluster for drover's types and the namespace to use: ns, else
// the kubeconfig context's, else "default".
func (c Cluster) Client(ns string) (client.WithWatch, string, error) {
	conn := &cli.Connection{Kubeconfig: c.Kubeconfig, Namespace: ns}
	cl, namespace, err := conn.Client()
	if err != nil {
		return nil, "", fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	return cl, namespace, nil
}
