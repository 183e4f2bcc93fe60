// Package v1alpha1 holds drover's API, group drover.io, version v1alpha1.
//
// Hub resources: DRCluster (how the hub reaches a managed cluster), DRPolicy (a pair of clusters
// and how often and by which backend their applications replicate) and DRPlacementControl (one
// protected application and the action asked of it). Managed-cluster resource:
// VolumeReplicationGroup (the agent's view of one application on one cluster).
//
// The package imports only the standard library, k8s.io/api and k8s.io/apimachinery, so any
// client can use it. Condition types, reasons and event reasons are constants in conditions.go.
//
// +kubebuilder:object:generate=true
// +groupName=drover.io
package v1alpha1
