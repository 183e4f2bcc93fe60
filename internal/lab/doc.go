// Package lab runs drover's lab on one machine: a hub and two managed clusters (east, west), each
// a real Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager, and on managed
// clusters kube-scheduler, kwok fake nodes and lab storage), started as processes that outlive
// the CLI, found again through /proc, stopped and started per cluster to simulate losing one.
//
// Its folders:
//
//   - process/: the one process runner: start detached, find in /proc, stop, ports, RSS and CPU,
//     and what the freezer reads of /proc (a process's state and parent, its mounts).
//   - freeze/: stops every process that uses a volume while the storage copies it
//     (crash-consistent points), and resumes them.
//   - storage/: the lab storage (CSI side, csi-addons, VolSync), `drover lab storage-controller`.
//   - kubelet/: the lab kubelet that runs drover's pods as processes, `drover lab kubelet`.
//   - netproxy/: the loopback proxies in front of a managed cluster, cut by a partition.
//   - labtest/: the one test harness: a lab per test package, started in TestMain.
//   - crds/: the external CRDs the clusters serve; upstream/ finds the upstream projects' own.
//   - records/: workload records, an append-only checksummed log per writer in a volume.
//   - writer/: the workload writer, run by `drover lab writer` in a pod or by the storage for it.
//   - ocm/: the stand-in for OCM's placement controller on the hub.
//   - deployer/: the stand-in for a GitOps tool in placement mode.
//   - argocd/: a real Argo CD in placement mode (`drover lab up --gitops argocd`).
//   - s3fault/: an S3 proxy that injects the faults of a production object store.
//   - crash/: kills a drover component at its Nth write.
//
// A cluster starts as an ordered list of steps (cluster.go), one file per component with its
// flags and readiness: component_etcd.go, component_apiserver.go,
// component_controller_manager.go, component_scheduler.go, component_kwok.go,
// component_storage.go, component_s3.go, component_proxy.go, component_kubelet.go and, beside
// the clusters, component_prometheus.go; components.go finds, checks and stops them.
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
