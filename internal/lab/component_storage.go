package lab

const (
	componentStorage      = "lab-storage"
	storageControllerVerb = "storage-controller"
)

// storageStep is a managed cluster's lab storage, `drover lab storage-controller`
// (internal/lab/storage), with its peer's data directory for mirroring; starting it is enough.
func (c *Cluster) storageStep() step {
	return step{component: component{name: componentStorage, binary: c.lab.opts.DroverBinary, args: []string{
		"lab", storageControllerVerb,
		"--cluster=" + c.Name,
		"--kubeconfig=" + c.KubeconfigPath(),
		"--data-dir=" + c.storageDir(),
		"--peer-data-dir=" + c.peer().storageDir(),
		"--partition-flag=" + c.PartitionFlag(),
		"--peer-partition-flag=" + c.peer().PartitionFlag(),
		"--multicluster-network-flag=" + c.lab.MultiClusterFlag(),
	}}}
}
