// Package kubeobjects captures and restores the Kubernetes objects of an application's
// namespaces, for drover's self-contained mode (a DRPlacementControl with protectedNamespaces):
// the agent captures them on the primary into the object stores and restores them on the peer
// after a failover or relocation, and removes the application's workloads from a demoted old
// primary.
//
// What is captured (Selection): by default a fixed list of Kubernetes' own namespaced kinds that
// make up an application (workloads, Services, ConfigMaps, Secrets, ServiceAccounts, RBAC, and
// a few policy kinds, see DefaultKinds); with includedKinds, exactly the kinds named there, custom
// resources included. Never captured, whatever the spec says: PVCs and PVs (the volume path owns
// them), objects that controllers derive (Pods, ReplicaSets, Endpoints, EndpointSlices, Events,
// Leases, ControllerRevisions), drover's own and the replication backends' kinds, objects with a
// controller owner, the ServiceAccount "default", the kube-root-ca.crt ConfigMap and
// service-account token Secrets (Skip). Each object is cleaned of what only means something on
// the cluster it came from (Clean).
//
// A capture is one JSON document (Capture) written with one PUT per store, so a reader sees
// either the previous capture or the new one, never half of one.
//
// A capture read back is untrusted: whoever can write to a store writes it. Before a restore,
// Check refuses the whole capture for any object outside the group's protected namespaces (the
// caller's, never the document's), of a cluster-scoped kind as this cluster's RESTMapper serves
// it, of a kind never captured, or a RoleBinding to every user; it drops service-account token
// Secrets and keeps only a Namespace's labels and annotations that NamespaceKeyRestored allows,
// and its Pod Security level: the captured enforce level, never below baseline (LevelOf).
//
// Restore creates what is missing in tiers (Order): Namespaces, then ServiceAccounts, RBAC,
// ConfigMaps and Secrets, then Services, then other kinds, then custom resources, and workloads
// last, so a workload never starts without its configuration. An object that exists is left as
// it is (adopted), never overwritten; a Namespace only gains the stored labels and annotations it
// lacks, and its Pod Security level is raised to the stored one, never lowered. An object whose
// pods the level of its namespace refuses (internal/podsecurity, Kubernetes' own checks) is not
// created and is named in RestoreResult.Refused: the API server judges the pods of a Deployment,
// not the Deployment, so a privileged one an editor got past the primary's namespace would
// otherwise start on the peer. Every step is idempotent, so a restore interrupted anywhere
// continues.
//
// The package is pure logic over a controller-runtime client (unstructured objects, read
// uncached) and its RESTMapper (discovery); it knows nothing of VolumeReplicationGroups beyond
// the KubeObjectProtectionSpec.
package kubeobjects
