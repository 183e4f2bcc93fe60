// Package drcluster reconciles DRClusters on the hub: it checks that the kubeconfig Secret gives
// a client of the cluster (Validated) and probes the cluster through the gateway (Reachable, with
// a grace period before it turns False). It owns nothing on the managed cluster.
package drcluster
