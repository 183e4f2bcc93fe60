package cluster

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/version"
)

// versionProbeTimeout bounds the requests to the hub, unless --request-timeout sets one.
const versionProbeTimeout = 5 * time.Second

// notAsked is what version prints for what --client leaves out.
const notAsked = "not asked (--client)"

// VersionReport is what `drover version` prints: kind Version of CLIGroupVersion.
type VersionReport struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Client is this binary.
	Client BuildInfo `json:"client"`
	// HubCluster is the hub cluster's Kubernetes version, or why it is not known.
	HubCluster string `json:"hubCluster"`
	// Hub is drover's hub's version as the DRClusters' status records it (status.hubVersion),
	// the distinct ones joined with ", " while a new hub takes over; or why it is not known.
	Hub string `json:"hub"`
	// Agents maps each DRCluster to its agent's version, as the DRPlacementControls' summaries
	// of its VolumeReplicationGroups record it (status.vrgs[].agentVersion): the distinct ones
	// joined with ", " while the agent's groups are rewritten by a new agent; or why it is not
	// known.
	Agents map[string]string `json:"agents,omitempty"`
	// AgentsUnknown says why Agents is empty.
	AgentsUnknown string `json:"agentsUnknown,omitempty"`
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
// version and the versions drover's hub and agents record in the status of the DRClusters and
// the DRPlacementControls. Nothing the hub does not answer is an error: it is said.
func Version(conn *cli.Connection, w io.Writer, o VersionOptions) error {
	if err := cli.CheckOutput(o.Output, cli.OutputJSON, cli.OutputYAML); err != nil {
		return err
	}
	r := VersionReport{APIVersion: cli.CLIGroupVersion, Kind: "Version",
		Client:     BuildInfo{Version: version.Version, Commit: version.Commit, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH},
		HubCluster: notAsked, Hub: notAsked, AgentsUnknown: notAsked}
	if !o.ClientOnly {
		var reachable bool
		r.HubCluster, reachable = hubClusterVersion(conn)
		r.Hub, r.AgentsUnknown = "unknown: the hub cluster does not answer", "unknown: the hub cluster does not answer"
		if reachable {
			droverVersions(conn, &r)
		}
	}
	if o.Output != "" {
		return cli.WriteStructured(w, o.Output, r)
	}
	return writeVersionLines(w, r)
}

// writeVersionLines prints the report one line per component, an agent per line.
func writeVersionLines(w io.Writer, r VersionReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "client: %s (commit %s, %s, %s)\nhub cluster: %s\nhub: %s\n",
		r.Client.Version, r.Client.Commit, r.Client.Go, r.Client.Platform, r.HubCluster, r.Hub)
	if len(r.Agents) == 0 {
		fmt.Fprintf(&b, "agents: %s\n", r.AgentsUnknown)
	}
	clusters := make([]string, 0, len(r.Agents))
	for c := range r.Agents {
		clusters = append(clusters, c)
	}
	slices.Sort(clusters)
	for _, c := range clusters {
		fmt.Fprintf(&b, "agent on %s: %s\n", c, r.Agents[c])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// hubClusterVersion is the Kubernetes version of the hub cluster, or why it is not known, and
// whether the hub cluster answered.
func hubClusterVersion(conn *cli.Connection) (string, bool) {
	cfg, _, err := conn.Resolve()
	if err != nil {
		return "unknown: " + err.Error(), false
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = versionProbeTimeout
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return "unknown: " + err.Error(), false
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return fmt.Sprintf("not reachable at %s: %v", cfg.Host, err), false
	}
	return "Kubernetes " + v.GitVersion + " at " + cfg.Host, true
}

// droverVersions fills the hub's and the agents' versions from the DRClusters' status and the
// DRPlacementControls' summaries of their groups.
func droverVersions(conn *cli.Connection, r *VersionReport) {
	cl, _, err := conn.Client()
	if err != nil {
		r.Hub, r.AgentsUnknown = "unknown: "+err.Error(), "unknown: "+err.Error()
		return
	}
	timeout := versionProbeTimeout
	if cfg, _, err := conn.Resolve(); err == nil && cfg.Timeout > 0 {
		timeout = cfg.Timeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	clusters := &v1alpha1.DRClusterList{}
	if err := cl.List(ctx, clusters); err != nil {
		msg := "unknown: failed to list the DRClusters: " + err.Error()
		r.Hub, r.AgentsUnknown = msg, msg
		return
	}
	if len(clusters.Items) == 0 {
		r.Hub, r.AgentsUnknown = "unknown: no DRCluster exists to report it", "unknown: no DRCluster exists"
		return
	}
	hub := make([]string, 0, 1)
	for _, c := range clusters.Items {
		hub = append(hub, c.Status.HubVersion)
	}
	r.Hub = joinVersions(hub, "unknown: no DRCluster reports it yet (the hub writes it in their status)")
	r.Agents, r.AgentsUnknown = agentVersions(ctx, cl, clusters.Items), ""
}

// agentVersions maps each cluster to the versions its groups' summaries report, or why none
// does.
func agentVersions(ctx context.Context, cl client.Reader, clusters []v1alpha1.DRCluster) map[string]string {
	out := make(map[string]string, len(clusters))
	drpcs := &v1alpha1.DRPlacementControlList{}
	if err := cl.List(ctx, drpcs); err != nil {
		for _, c := range clusters {
			out[c.Name] = "unknown: failed to list the DRPlacementControls: " + err.Error()
		}
		return out
	}
	seen := map[string][]string{}
	for _, d := range drpcs.Items {
		for _, s := range d.Status.VRGs {
			seen[s.Cluster] = append(seen[s.Cluster], s.AgentVersion)
		}
	}
	for _, c := range clusters {
		out[c.Name] = joinVersions(seen[c.Name],
			fmt.Sprintf("unknown: no VolumeReplicationGroup on %s reports it yet (its agent writes it in their status)", c.Name))
	}
	return out
}

// joinVersions is the distinct non-empty versions, sorted and joined with ", "; none when there
// is none.
func joinVersions(versions []string, none string) string {
	distinct := slices.DeleteFunc(slices.Clone(versions), func(v string) bool { return v == "" })
	slices.Sort(distinct)
	distinct = slices.Compact(distinct)
	if len(distinct) == 0 {
		return none
	}
	return strings.Join(distinct, ", ")
}
