// Package kubelet is the lab's kubelet: for one cluster it registers a Node (DefaultNodeName
// unless told otherwise) that kwok does not manage (no kwok.x-k8s.io/node annotation; tainted
// NoSchedule so that the scheduler places no application pods there), keeps it Ready with a
// Lease, and runs the pods bound to that node as real processes on this machine, the way a
// kubelet runs containers:
//
//   - the command, arguments (with $(VAR) expansion), environment (values, fieldRef,
//     secretKeyRef, configMapKeyRef) and working directory of the pod template;
//   - the in-cluster configuration of the pod's ServiceAccount: a token from TokenRequest bound
//     to the pod and refreshed after 80 % of its life, KUBERNETES_SERVICE_HOST/PORT of the API
//     server on loopback, its CA, at /var/run/secrets/kubernetes.io/serviceaccount (or the
//     pod's own projected volume there);
//   - its Secret, ConfigMap, projected, downwardAPI and emptyDir volumes at their mount paths,
//     written atomically (a "..data" symlink swap) and refreshed when the objects change;
//   - its persistentVolumeClaim volumes (pvc.go): the directory of the lab storage's volume
//     behind the claim's PV (Options.StorageDir, driver.PVVolume) bound read-write, or read-only
//     when the volume or the mount says readOnly. A claim that is not bound, or whose image is a
//     mirror's secondary (not writable, as the storage's writer.go decides), keeps the pod's
//     containers waiting (ContainerCreating) with a FailedMount Warning event on the pod, retried
//     with a kubelet's back-off (500 ms doubling to 2m2s) until it mounts; once mounted a volume
//     stays mounted for the pod's life;
//   - the node's own directories (Options.NodeDirs), bound read-write into every container
//     outside the pod's spec, as a node's agent shares a directory with its pods: the lab's
//     writer processes report their counts to the cluster's storage through one;
//   - the securityContext's identity (security.go): runAsUser and runAsGroup (the container's
//     over the pod's), the pod's fsGroup and supplementalGroups as supplementary groups, dropped
//     to by setpriv once the mounts are bound; fsGroup ownership of PVC and emptyDir volumes as
//     pkg/volume/volume_linux.go sets it (group, g+rw, setgid directories), skipped with
//     fsGroupChangePolicy OnRootMismatch while the volume's root matches;
//   - each container's process in mount, PID and IPC namespaces of its own (clone flags, then
//     a script mounts /proc and /dev/shm, binds the mounts and execs): it is PID 1 there, so
//     when it ends the kernel kills every process it started, those that called setsid too;
//     the whole filesystem is read-only but for its volumes when readOnlyRootFilesystem is set;
//   - initContainers, one after another to completion before the containers, restarted on
//     failure unless the restartPolicy is Never (then the pod fails), reported in
//     initContainerStatuses with the Initialized condition and PodInitializing waits a kubelet
//     reports;
//   - the pod's restartPolicy: Always restarts an exited process, OnFailure one that failed, with
//     back-off (1 s doubling to 30 s, reset after 10 s running); a process not started again
//     leaves its container Terminated, and once every container is, the pod Succeeded (all
//     exited 0) or Failed, as a Job's pods end; a kubelet started again does not rerun them;
//   - termination messages (termination.go): a file per container bound at its
//     terminationMessagePath (default /dev/termination-log), emptied at each start; at exit its
//     last 4 KiB become state.terminated.message or, when it is empty, the policy is
//     FallbackToLogsOnError and the exit code non-zero, the end of that run's log (80 lines,
//     2 KiB); a pod's messages share 12 KiB;
//   - readiness and liveness probes (HTTP GET, TCP, exec), a failure an Unhealthy event; an exec
//     probe's command runs in the container's mount, PID and IPC namespaces (nsenter into those of
//     its process), in its working directory, with its environment and as its user;
//   - pods/exec through the API server (server.go), as a kubelet's server serves /exec
//     (kubernetes/kubernetes pkg/kubelet/server/server.go): an HTTPS server (Options.Serving)
//     on 127.0.0.1, its port in the Node's status.daemonEndpoints, its serving certificate
//     checked by the API server's --kubelet-certificate-authority, its callers' client
//     certificates checked against its client CA and authorized with a SubjectAccessReview of
//     nodes/proxy (webhook authorization); the streams negotiated over SPDY or WebSocket by
//     k8s.io/cri-streaming's remotecommand, the library a container runtime's streaming server
//     uses; the command run as an exec probe's is (nsenter into the container's namespaces, its
//     working directory, environment and user), its exit code returned (128 + the signal's
//     number when it was killed, as it is with every process of the container when the
//     container's first process ends: 137 for an exec that outlives it, as from runc); no TTY;
//   - SIGTERM then SIGKILL after the grace period on deletion (SIGTERM to the container's
//     process alone, as a runtime signals a container's first process; PID 1 of its
//     namespace, it gets it only if it handles it, as in a container), then the pod's
//     removal; processes die with the kubelet (Pdeathsig).
//
// An image is not pulled: Options.Images maps an image name (without tag) to a binary on this
// machine, which stands for the image's one entrypoint. Pods of other images stay Waiting with
// ErrImagePull and a message that names the images the lab knows.
//
// Each pod gets its own loopback address (from Options.PodCIDR, inside 127.0.0.0/8) as its pod
// IP. Processes share the machine's network namespace, so an argument that binds a port the
// container declares on all addresses (--metrics-bind-address=:8443) is narrowed to the pod IP,
// standing in for the pod's own network namespace. A Service of type ExternalName whose
// externalName is a pod IP of this node gets its ports forwarded to their target ports on that
// pod, as kube-proxy would: that is how the API server reaches a webhook here.
//
// What differs from a real kubelet: processes share the machine's root filesystem, users and
// network namespace, with no resource limits, no seccomp profile and the capabilities of their
// user (root's all, another user's none) whatever securityContext.capabilities says; a pod's
// containers do not share an IPC namespace (each has its own) and shareProcessNamespace is not
// supported; images are binaries (a container's command[0] is
// ignored); a runAsUser without runAsGroup runs with gid 0 (no image /etc/passwd to look up);
// FailedMount events come at each failed attempt rather than after syncPod's two-minute wait;
// gRPC probes are not run; envFrom and hostPath volumes, subPathExpr and restartable (sidecar)
// init containers are not supported; mount points are created (empty) on the machine's
// filesystem, and for a container of another user than root the directories above them are
// made searchable by every user and its image's binary is bound in a tmpfs of its own at
// /run/lab-kubelet/<binary name> (its host path may be one that user cannot reach).
//
// Production code never imports this package; the lab does.
package kubelet
