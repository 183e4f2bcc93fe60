// Package kubelet is the lab's kubelet: for one cluster it registers a Node (DefaultNodeName
// unless told otherwise) that kwok does not manage, and runs the pods bound to that node as real
// processes on this machine, the way a kubelet runs containers: the command, arguments,
// environment and working directory of the pod template; the in-cluster configuration of the
// pod's ServiceAccount (a bound token from TokenRequest, KUBERNETES_SERVICE_HOST/PORT, the
// cluster CA at /var/run/secrets/kubernetes.io/serviceaccount); its mounted Secrets, ConfigMaps
// and emptyDirs at their mount paths, in a mount namespace of its own per process; restarts with
// back-off; readiness from HTTP probes; graceful termination on deletion.
//
// An image is not pulled: Options.Images maps an image name (without tag) to a binary on this
// machine, which stands for the image's one entrypoint. Pods of other images stay Waiting with
// ErrImagePull and a message that names the images the lab knows.
//
// Each pod gets its own loopback address (from Options.PodCIDR, inside 127.0.0.0/8) as its pod
// IP. Processes share the host's network namespace, so a process that listens on all addresses
// (":8081") still clashes with another pod's process on the same port: pods must bind
// $(POD_IP):port, which this kubelet expands in command and arguments as a kubelet does.
//
// Production code never imports this package; the lab does.
package kubelet
