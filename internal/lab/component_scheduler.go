package lab

const componentScheduler = "kube-scheduler"

// schedulerStep is a managed cluster's kube-scheduler; starting it is enough.
func (c *Cluster) schedulerStep() step {
	kubeconfig := c.KubeconfigPath()
	return step{component: component{name: componentScheduler, binary: c.bin("kube-scheduler"), args: []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--secure-port=0",
		"--leader-elect=false",
	}}}
}
