// Package lab runs drover's lab on one machine: a hub and two managed clusters (east, west), each
// a real Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager, and on managed
// clusters kube-scheduler, kwok fake nodes and lab storage), started as processes that outlive
// the CLI, found again through /proc, stopped and started per cluster to simulate losing one.
//
// Production code never imports this package; `drover lab` and tests do.
package lab
