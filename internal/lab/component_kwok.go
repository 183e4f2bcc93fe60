package lab

const componentKwok = "kwok"

// kwokStep is a managed cluster's kwok, the fake nodes that run application pods; starting it
// is enough: the cluster's start waits for its nodes at the end.
func (c *Cluster) kwokStep() step {
	return step{component: component{name: componentKwok, binary: c.bin("kwok"), args: []string{
		"--kubeconfig=" + c.KubeconfigPath(),
		"--config=" + c.bin("kwok-stages.yaml"),
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
		// kwok acts for a node (runs and deletes its pods) only while it holds the node's
		// Lease, under an identity new in every process. A restarted kwok takes the Lease over
		// only once it expired, trying every renew interval (a quarter of the duration; the
		// first try after a start often fails, before its Lease cache is filled). With the
		// kubelet's 40 s, a cluster back from a short `stop` kept its deleted pods Terminating
		// and their volumes attached for 10-40 s, where a restarted kubelet renews its own
		// Lease at once. 4 s (renewed every second) makes the handover take about a second;
		// kcm judges nodes by its node-monitor grace period, which this does not change.
		"--node-lease-duration-seconds=4",
		"--server-address=",
	}}}
}
