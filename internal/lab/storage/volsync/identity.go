package volsync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab/storage/driver"
)

// Who a mover runs as, as VolSync builds its mover pods (backube/volsync
// internal/controller/mover/rsynctls/mover.go, ensureJob; internal/controller/utils/utils.go,
// UpdatePodTemplateSpecFromMoverConfig; docs/usage/permissionmodel.rst):
//   - the container rsync-tls has allowPrivilegeEscalation false, privileged false,
//     readOnlyRootFilesystem true and every capability dropped; a privileged mover (its namespace
//     annotated volsync.backube/privileged-movers: "true", internal/controller/utils/namespace.go)
//     adds DAC_OVERRIDE, CHOWN, FOWNER and SETGID and runs as UID 0;
//   - the pod's securityContext is spec.rsyncTLS.moverSecurityContext as it is, nil when unset:
//     VolSync adds no runAsNonRoot and no seccomp profile of its own.
//
// The user a mover runs as is its container's runAsUser, else its pod's, else its image's, which
// is root. OpenShift's restricted SCC would assign a UID from the namespace's range; the lab is a
// plain Kubernetes, which assigns none. So an unprivileged mover without a moverSecurityContext
// runs as UID 0 with no capability, and rsync cannot work that way (permissionmodel.rst, "Using
// rsync-tls with UID 0"): the destination's rsync daemon, root without CAP_SETGID, fails every
// connection at its setgid ("@ERROR: setgid failed"), and a source running so fails its sync. Both
// are mover failures, retried: the source's status.latestMoverStatus says Failed with the log and
// Synchronizing stays SyncInProgress. (The destination's own Job does not fail: server.sh waits
// for the control file, which never comes.)
//
// Pod Security admission is the API server's own: the lab's destination Job is VolSync's, so the
// kube-apiserver refuses its pod in a namespace labelled pod-security.kubernetes.io/enforce:
// restricted unless the pod complies (runAsNonRoot, the RuntimeDefault or a Localhost seccomp
// profile, capabilities dropped, no privilege escalation, no root user), and the Job never gets
// a pod. A source's mover is the lab's file copy (rsync.go), so the pod VolSync would make
// for it is submitted to the API server as a dry run before each sync: refused, the sync waits, as
// behind a Job without a pod. A container whose runAsNonRoot its user contradicts (root) is refused
// by the kubelet (CreateContainerConfigError), which kwok does not model: the lab counts such a
// mover as never started.

const (
	// privilegedMoversAnnotation is VolSync's namespace annotation for privileged movers.
	privilegedMoversAnnotation = "volsync.backube/privileged-movers"
	// moverTempVolume is the memory emptyDir VolSync mounts at /tmp.
	moverTempVolume = "tempdir"
)

// setgidFailed is what rsync's client prints when the daemon it reached runs as root without
// CAP_SETGID: the daemon's setgid to its module's user fails before any file moves.
const setgidFailed = "@ERROR: setgid failed\nrsync error: error starting client-server protocol (code 5) at main.c(1850) [sender=3.4.1]\nSynchronization failed. rsync returned: 500"

// privilegedMovers reports whether VolSync grants privileged movers in a namespace.
func (s *store) privilegedMovers(ctx context.Context, namespace string) (bool, error) {
	ns := &corev1.Namespace{}
	if err := s.Client.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return ns.Annotations[privilegedMoversAnnotation] == "true", nil
}

// moverPodSpec is the pod of an rsync-tls mover as VolSync builds it: command is server.sh or
// client.sh, claim the data PVC, podSC the spec's moverSecurityContext.
func moverPodSpec(command, sa, claim, keySecret string, podSC *corev1.PodSecurityContext, privileged bool) corev1.PodSpec {
	csc := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		Privileged:               ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
	}
	privilegedEnv := "0"
	if privileged {
		privilegedEnv = "1"
		csc.Capabilities.Add = []corev1.Capability{"DAC_OVERRIDE", "CHOWN", "FOWNER", "SETGID"}
		csc.RunAsUser = ptr.To[int64](0)
	}
	return corev1.PodSpec{
		RestartPolicy:      corev1.RestartPolicyNever,
		ServiceAccountName: sa,
		SecurityContext:    podSC.DeepCopy(),
		Containers: []corev1.Container{{
			Name: "rsync-tls", Image: moverImage, Command: []string{"/bin/bash", "-c", command},
			Env:             []corev1.EnvVar{{Name: "PRIVILEGED_MOVER", Value: privilegedEnv}},
			SecurityContext: csc,
			VolumeMounts: []corev1.VolumeMount{{Name: moverDataVolume, MountPath: "/data"}, {Name: "keys", MountPath: "/keys"},
				{Name: moverTempVolume, MountPath: "/tmp"}},
		}},
		Volumes: []corev1.Volume{
			{Name: moverDataVolume, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}},
			{Name: "keys", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: keySecret, DefaultMode: ptr.To(int32(0o600))}}},
			{Name: moverTempVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		},
	}
}

// moverUser is the UID a mover pod's first container runs as: its own runAsUser, else the
// pod's, else the mover image's, root.
func moverUser(spec *corev1.PodSpec) int64 {
	if len(spec.Containers) > 0 {
		if sc := spec.Containers[0].SecurityContext; sc != nil && sc.RunAsUser != nil {
			return *sc.RunAsUser
		}
	}
	if spec.SecurityContext != nil && spec.SecurityContext.RunAsUser != nil {
		return *spec.SecurityContext.RunAsUser
	}
	return 0
}

// moverCannotStart says why the kubelet would not start a mover pod's container: runAsNonRoot
// (the container's, else the pod's) with a root user. "" when it starts.
func moverCannotStart(spec *corev1.PodSpec) string {
	nonRoot := spec.SecurityContext != nil && ptr.Deref(spec.SecurityContext.RunAsNonRoot, false)
	if len(spec.Containers) > 0 {
		if sc := spec.Containers[0].SecurityContext; sc != nil && sc.RunAsNonRoot != nil {
			nonRoot = *sc.RunAsNonRoot
		}
	}
	if nonRoot && moverUser(spec) == 0 {
		return "its container runs as UID 0 with runAsNonRoot set, which the kubelet refuses (CreateContainerConfigError)"
	}
	return ""
}

// rootWithoutPrivilege reports whether a mover pod runs as root with no capability: the case
// rsync cannot work in.
func rootWithoutPrivilege(spec *corev1.PodSpec) bool {
	if moverUser(spec) != 0 || len(spec.Containers) == 0 {
		return false
	}
	sc := spec.Containers[0].SecurityContext
	return sc == nil || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Add, "SETGID")
}

// destinationRefusal is why the destination's rsync daemon refuses every connection, as the
// source's rsync prints it; "" when it accepts.
func destinationRefusal(spec *corev1.PodSpec) string {
	if rootWithoutPrivilege(spec) {
		return setgidFailed
	}
	return ""
}

// jobRefusal is the message of the Job controller's latest FailedCreate event of a Job: why the
// API server refused its pod (Pod Security admission, a webhook); "" when there is none.
func (s *store) jobRefusal(ctx context.Context, job *batchv1.Job) string {
	if s.Reader == nil {
		return ""
	}
	events := &corev1.EventList{}
	if err := s.Reader.List(ctx, events, client.InNamespace(job.Namespace),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("involvedObject.name", job.Name)}); err != nil {
		return ""
	}
	var latest *corev1.Event
	for i := range events.Items {
		e := &events.Items[i]
		if e.Reason != "FailedCreate" || e.InvolvedObject.UID != job.UID {
			continue
		}
		if latest == nil || eventTime(e).After(eventTime(latest)) {
			latest = e
		}
	}
	if latest == nil {
		return ""
	}
	return latest.Message
}

// eventTime is when an event last happened.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// startSourceMover stands for the start of the source's mover Job: the pod VolSync would make
// is submitted to the API server as a dry run (its Pod Security admission answers); a refused
// pod makes the sync wait, as a Job without a pod does. A mover that starts but runs as root
// without capabilities, or reaches a destination whose daemon does, fails as rsync does.
func (s *store) startSourceMover(ctx context.Context, sc *rsScope) (ctrl.Result, error) {
	rs := sc.rs
	privileged, err := s.privilegedMovers(ctx, rs.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	spec := moverPodSpec("/mover-rsync-tls/client.sh", "volsync-src-"+rs.Name, "volsync-"+rs.Name+"-src",
		sc.keyName, rs.Spec.RsyncTLS.MoverSecurityContext, privileged)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: rs.Namespace, GenerateName: boundedName("volsync-rsync-tls-src-", rs.Name) + "-",
		Labels: map[string]string{labelCreatedBy: labelCreatedByVolSync}}, Spec: spec}
	if err := s.Client.Create(ctx, pod, client.DryRunAll); err != nil {
		if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
			return ctrl.Result{}, fmt.Errorf("failed to submit the mover pod of ReplicationSource %s: %w", klog.KObj(rs), err)
		}
		setSynchronizing(&rs.Status.Conditions, rs.Generation, metav1.ConditionTrue, volsyncv1alpha1.SynchronizingReasonSync,
			"Synchronization in progress: the mover's pod is refused: "+err.Error())
		return ctrl.Result{RequeueAfter: volsyncRetry}, nil
	}
	if why := moverCannotStart(&spec); why != "" {
		setSynchronizing(&rs.Status.Conditions, rs.Generation, metav1.ConditionTrue, volsyncv1alpha1.SynchronizingReasonSync,
			"Synchronization in progress: the mover does not start: "+why)
		return ctrl.Result{RequeueAfter: volsyncRetry}, nil
	}
	if rootWithoutPrivilege(&spec) {
		return moverFailed(sc, "rsync-tls mover running as UID 0 without capabilities (no moverSecurityContext.runAsUser, no "+
			privilegedMoversAnnotation+" annotation): rsync cannot work this way"), nil
	}
	var l listener
	if err := driver.ReadJSON(listenerPath(s.Opts.PeerDataDir, sc.address), &l); err != nil && !errors.Is(err, os.ErrNotExist) {
		return ctrl.Result{}, err
	}
	if l.Refuses != "" {
		return moverFailed(sc, l.Refuses), nil
	}
	return ctrl.Result{}, nil
}
