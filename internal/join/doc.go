// Package join registers a managed cluster with the hub and removes it again: the library
// behind `drover cluster join` and `drover cluster unjoin`, also called by the lab. It also
// rotates the store keys of the S3 profiles' Secrets it copies (`drover cluster
// rotate-store-key`, rotate.go and retire.go, which reseals what the retired key sealed) and
// their access keys (`drover cluster rotate-s3-credentials`, s3creds.go).
//
// The clusters joined before (join's copies of a new profile, the rotations' rewrites of every
// copy) are reached with a kubeconfig of the operator's for each (Options.Peers,
// RotateOptions.Clusters), checked to reach the cluster of that name; never with the hub's
// credential there, which has no right on Secrets, and the hub's kubeconfig Secrets are not
// read for it (peers.go, docs/decisions/0010).
//
// Join creates, on the managed cluster, the hub's least-privilege identity (the ServiceAccount
// drover-hub bound to config/rbac/hub-on-managed-cluster), the Secret its tokens are bound to
// and the credentials Secret of the cluster's S3 profile; on the hub, a kubeconfig Secret
// carrying an expiring token of the TokenRequest API (token.go; the hub renews it) and the
// DRCluster. Everything is applied server-side under one field owner and labelled
// with the cluster's name, so a second join changes nothing and unjoin finds what join made.
//
// Every check (both clusters reachable, credentials accepted and allowed to create what join
// creates, drover's CRDs installed, the name not joined to another server) runs before the
// first write; a write that fails midway deletes what that run created.
package join
