package cli

import (
	"fmt"
	"io"
	"runtime"
	"time"

	"k8s.io/client-go/discovery"

	"github.com/drover-io/drover/internal/version"
)

// versionProbeTimeout bounds the request for the hub's version, unless --request-timeout sets one.
const versionProbeTimeout = 5 * time.Second

// notPublished is what version prints for drover's hub and agents: neither publishes the
// version it was built from anywhere the CLI reads.
const notPublished = "unknown (not published)"

// VersionReport is what `drover version` prints: kind Version of CLIGroupVersion.
type VersionReport struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Client is this binary.
	Client BuildInfo `json:"client"`
	// HubCluster is the hub cluster's Kubernetes version, or why it is not known.
	HubCluster string `json:"hubCluster"`
	// Hub and Agents are drover's hub's and agents' versions, or why they are not known.
	Hub    string `json:"hub"`
	Agents string `json:"agents"`
}

// BuildInfo is a drover binary's version.
type BuildInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// VersionOptions are what `drover version` asks for.
type VersionOptions struct {
	// Output is "" (lines), json, yaml or jsonpath=TEMPLATE.
	Output string
	// ClientOnly leaves the hub out.
	ClientOnly bool
}

// Version prints the client's version and, unless ClientOnly, the hub cluster's Kubernetes
// version when it answers; drover's hub and agents publish none.
func Version(conn *Connection, w io.Writer, o VersionOptions) error {
	if err := checkOutput(o.Output, OutputJSON, OutputYAML); err != nil {
		return err
	}
	r := VersionReport{APIVersion: CLIGroupVersion, Kind: "Version",
		Client:     BuildInfo{Version: version.Version, Commit: version.Commit, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH},
		HubCluster: "not asked (--client)", Hub: notPublished, Agents: notPublished}
	if !o.ClientOnly {
		r.HubCluster = hubClusterVersion(conn)
	}
	if o.Output != "" {
		return writeStructured(w, o.Output, r)
	}
	_, err := fmt.Fprintf(w, "client: %s (commit %s, %s, %s)\nhub cluster: %s\nhub: %s\nagents: %s\n",
		r.Client.Version, r.Client.Commit, r.Client.Go, r.Client.Platform, r.HubCluster, r.Hub, r.Agents)
	return err
}

// hubClusterVersion is the Kubernetes version of the hub cluster, or why it is not known.
func hubClusterVersion(conn *Connection) string {
	cfg, _, err := conn.Resolve()
	if err != nil {
		return "unknown: " + err.Error()
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = versionProbeTimeout
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return "unknown: " + err.Error()
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return fmt.Sprintf("not reachable at %s: %v", cfg.Host, err)
	}
	return "Kubernetes " + v.GitVersion + " at " + cfg.Host
}
