// Package webhook is the agent's fence: a validating admission webhook that refuses to create a
// pod mounting a PVC whose VolumeReplicationGroup is being demoted or is secondary (DESIGN.md,
// PVC rule 3). It closes the race between the relocation's consumer check ("no pod uses the
// PVC") and the demotion for the final sync: without it, a pod created in between could write to
// the volume after the check, and that write would miss the final sync.
//
// It owns:
//
//   - the admission handler (PodFence) and how it decides that a PVC is fenced (Fences, with
//     ClusterFences reading the group the PVC's drover.io/protected-by label names, and the
//     groups' own status.protectedPVCs, which no editor of the PVC can change), and the one
//     exception: the VolSync mover pod of drover's own ReplicationDestination (or Direct
//     ReplicationSource) for the fenced PVC, created by the Job controller (Movers,
//     ClusterMovers);
//   - the HTTPS server that serves it (Server), with a self-signed certificate made in memory
//     (the lab and tests) or one from files (CertFiles: a mounted Secret, reloaded when renewed);
//   - in a real installation, that certificate: the agent's own CA and serving certificate for
//     the fence's Service, kept in a Secret and renewed before they expire, and the CA injected
//     into the configuration the release manifests install (AddCertRotator, with
//     open-policy-agent/cert-controller's rotator), unless cert-manager does both;
//   - the ValidatingWebhookConfiguration drover-fence (EnsureConfiguration, in the lab; the
//     release manifests declare the same one, config/agent/base/fence.yaml) and the namespace
//     label that scopes it (SetNamespaceFence), and a dry-run probe that proves the fence is
//     enforced by the API server (ProbeFence).
//
// Free and safe by construction: the configuration selects only namespaces labelled
// drover.io/fenced=true, which the agent sets only while a group in the namespace is demoting or
// secondary, and never the control plane's or drover's own (NeverFenced). Such namespaces fail closed (failurePolicy Fail: if the agent is down, no pod may
// be created there); every other namespace never calls the webhook, so an agent outage cannot
// block ordinary pods.
//
// Only CREATE is fenced: a pod's spec.volumes are immutable after creation, and an ephemeral
// container (pods/ephemeralcontainers) can mount only volumes the pod already has, so no update
// can add a PVC to a pod.
package webhook
