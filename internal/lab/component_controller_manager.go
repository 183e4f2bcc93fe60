package lab

import "path/filepath"

const componentKCM = "kube-controller-manager"

// controllerManagerUser is kube-controller-manager's user, as kubeadm names it. The lab runs it
// without per-controller ServiceAccounts (--use-service-account-credentials=false), so every
// controller, the Job controller included, sends its requests as this user.
const controllerManagerUser = "system:kube-controller-manager"

// controllerManagerStep is the cluster's kube-controller-manager; starting it is enough.
func (c *Cluster) controllerManagerStep() step {
	p := c.pki()
	return step{component: component{name: componentKCM, binary: c.bin("kube-controller-manager"), args: []string{
		// Its own identity, as a real cluster's: the API server's admission webhooks (drover's
		// fence) see the pods the Job controller creates as system:kube-controller-manager's.
		"--kubeconfig=" + c.controllerManagerKubeconfigPath(),
		"--secure-port=0",
		"--leader-elect=false",
		"--service-account-private-key-file=" + p.path("sa.key"),
		"--root-ca-file=" + p.path("ca.crt"),
		"--use-service-account-credentials=false",
		// Default client rates (20/30) and the binder's 15 s resync dominate failover time in
		// a lab (LAB-NOTES: 85 s vs 4.7 s to bind 300 PVCs).
		"--kube-api-qps=1000",
		"--kube-api-burst=2000",
		"--pvclaimbinder-sync-period=1s",
	}}}
}

// controllerManagerKubeconfigPath is kube-controller-manager's kubeconfig.
func (c *Cluster) controllerManagerKubeconfigPath() string {
	return filepath.Join(c.dir, "kube-controller-manager.kubeconfig")
}
