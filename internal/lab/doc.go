// Package lab runs drover's lab on one machine: a hub and two managed clusters (east, west), each
// a real Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager, and on managed
// clusters kube-scheduler, kwok fake nodes and lab storage), started as processes that outlive
// the CLI, found again through /proc, stopped and started per cluster to simulate losing one.
// The hub and the peer reach a managed cluster through its loopback proxies (lab-proxy), which
// `drover lab partition CLUSTER` cuts while the cluster runs and `heal` reopens (partition.go).
//
// The clusters serve the CRDs of the external kinds drover drives (csi-addons, VolSync, OCM,
// VolumeSnapshot) from internal/lab/crds. With Options.UpstreamCRDs, `drover lab up
// --upstream-crds=DIR` or DROVER_LAB_UPSTREAM_CRDS=DIR, they serve instead the upstream
// projects' own CRDs read from DIR at each start, verbatim (`--upstream-crds` alone and the
// tests take them where internal/lab/crds/upstream finds them: $DROVER_UPSTREAM_APIS, the
// checkout's .cache/upstream-apis that `make upstream-apis` fills, ../shared/upstream-apis):
// drover's objects then meet the real schemas, their validation rules, defaults and
// subresources. The e2e subset of make test runs that way when it finds them. With Options.MultiClusterNetwork
// (`drover lab up --multicluster-network`) the managed clusters share a multi-cluster network,
// the stand-in for a Multi-Cluster Services implementation: ServiceExports are exported and
// their clusterset addresses resolve from the peer (network.go).
//
// Production code never imports this package; `drover lab` and tests do.
package lab
