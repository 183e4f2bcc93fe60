package lab

import (
	"maps"
	"path/filepath"
	"slices"

	"github.com/drover-io/drover/internal/lab/pgsql"
	"github.com/drover-io/drover/internal/lab/storage"
)

const (
	// componentKubelet runs the lab kubelet: `drover lab kubelet`.
	componentKubelet = "lab-kubelet"
	kubeletVerb      = "kubelet"
)

// KubeletStateDir is where the cluster's lab kubelet records its pods (kubelet.ReadState).
func (c *Cluster) KubeletStateDir() string { return filepath.Join(c.dir, "kubelet") }

// kubeletStep is `drover lab kubelet` for the cluster (internal/lab/kubelet): it runs the pods
// of drover's Deployments, with the drover binary as the image DroverImage and their logs in the
// cluster's log directory; on a managed cluster it mounts PVC volumes from the cluster's lab
// storage and runs the application pods that write the lab's records themselves
// (storage.WriterProcess): the drover binary is the image storage.WriterImage too, and the
// storage's status directory of the writers is bound in every container at
// storage.WriterStatusMountPath; PostgreSQL's images (pgsql.Install.Images) when PostgreSQL is
// installed on this machine. Starting it is enough (the install waits for drover's pods).
func (c *Cluster) kubeletStep() step {
	args := []string{
		"lab", kubeletVerb,
		"--kubeconfig=" + c.KubeconfigPath(),
		"--state-dir=" + c.KubeletStateDir(),
		"--log-dir=" + c.logDir(),
		"--pod-cidr=" + c.PodCIDR().String(),
		"--image=" + DroverImage + "=" + c.lab.opts.DroverBinary,
		"--tls-cert-file=" + c.pki().path("kubelet.crt"),
		"--tls-private-key-file=" + c.pki().path("kubelet.key"),
		"--client-ca-file=" + c.pki().path("ca.crt"),
	}
	if c.Role == RoleManaged {
		args = append(args, "--pin-pod-ip="+AgentDeployment+"="+c.AgentPodIP().String(),
			"--storage-dir="+c.storageDir(), "--storage-driver="+BlockDriver, "--storage-driver="+FileDriver,
			"--image="+storage.WriterImage+"="+c.lab.opts.DroverBinary,
			"--node-dir="+storage.WriterStatusDir(c.storageDir())+"="+storage.WriterStatusMountPath)
		args = append(args, postgresImages()...)
	}
	return step{component: component{name: componentKubelet, binary: c.lab.opts.DroverBinary, args: args}}
}

// postgresImages are the --image flags of PostgreSQL's images, none when PostgreSQL is not
// installed: the lab runs without it, and a pod of those images then waits in ErrImagePull,
// whose message names the images the lab kubelet knows.
func postgresImages() []string {
	pg, err := pgsql.Find()
	if err != nil {
		return nil
	}
	images := pg.Images()
	var args []string
	for _, image := range slices.Sorted(maps.Keys(images)) {
		args = append(args, "--image="+image+"="+images[image])
	}
	return args
}
