package story

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/lab/kubelet"
	"github.com/drover-io/drover/internal/lab/storage"
	labwriter "github.com/drover-io/drover/internal/lab/writer"
)

// Workload is the kind of application a case protects.
type Workload string

const (
	// StatefulSetKeepsPVCs is a StatefulSet with the default PVC retention: its PVCs stay when it
	// is deleted. The seed's case.
	StatefulSetKeepsPVCs Workload = "sts-retain"
	// StatefulSetDeletesPVCs is a StatefulSet with persistentVolumeClaimRetentionPolicy
	// whenDeleted: Delete.
	StatefulSetDeletesPVCs Workload = "sts-delete"
	// DeploymentWithPVC is a Deployment of one pod with one PVC of its own, deleted with it.
	DeploymentWithPVC Workload = "deployment"
	// StatefulSetTwoVolumes is a StatefulSet whose pods each mount two PVCs, data and log (the
	// default retention: kept when it is deleted), and write twin records across them
	// (internal/lab/records: record n to data, then to log): the application whose data spans
	// volumes, as a database with its log on a volume of its own. Each of its volumes fails over
	// from its own instant unless the case names a consistency group: the failover's judge reports the twins that
	// breaks (Step.TornTwins); a relocation, whose final sync copies stopped volumes, keeps them.
	StatefulSetTwoVolumes Workload = "sts-twin"
)

// twinMounts are the claim templates of the StatefulSetTwoVolumes workload and their mount
// paths, in the order its writer writes them.
var twinMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "log", MountPath: "/log"}}

// AppLabel selects the application's pods and PVCs: app=db.
var AppLabel = map[string]string{"app": "db"}

// WriterInterval is the time between two records of each writer.
const WriterInterval = "200ms"

// TwinWriterInterval is the time between two twin records of the StatefulSetTwoVolumes
// workload's writers, shorter than WriterInterval as a database's log commits more often than
// that: the two volumes' copies, each taken at its own instant, are rarely less than this apart,
// so the records show what each instant holds.
const TwinWriterInterval = "50ms"

// writerInterval is the interval of workload w's writers.
func writerInterval(w Workload) string {
	if w == StatefulSetTwoVolumes {
		return TwinWriterInterval
	}
	return WriterInterval
}

// deploymentClaim is the PVC of the DeploymentWithPVC workload.
const deploymentClaim = "data-db"

// AppUser is the user, group and fsGroup the application's pods run as: non-root, as a real
// database's, so that drover takes its VolSync movers' user from them, and the pods meet the
// restricted Pod Security Standard.
const AppUser int64 = 1000

// manifests returns the application's objects, without a namespace: a workload named db whose
// pods write records (the lab's writer) into PVCs of storageClass labelled app=db, and a headless
// Service. With processes the pods run `drover lab writer` themselves on the lab kubelet's node
// (writerProcess); else they run on kwok's fake nodes and the lab storage writes for them.
func manifests(w Workload, replicas int32, storageClass string, processes bool) ([]client.Object, error) {
	pod := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{"app": "db", storage.WriterLabel: "true"},
			Annotations: map[string]string{storage.WriterIntervalAnnotation: writerInterval(w)},
		},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(AppUser), RunAsGroup: ptr.To(AppUser), FSGroup: ptr.To(AppUser),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name: "db", Image: "lab/writer",
				VolumeMounts:    []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				SecurityContext: restrictedContainer(),
			}},
		},
	}
	claims := []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: appLabels()}, Spec: claimSpec(storageClass)}}
	if w == StatefulSetTwoVolumes {
		pod.Spec.Containers[0].VolumeMounts = twinMounts
		claims = append(claims, corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "log", Labels: appLabels()}, Spec: claimSpec(storageClass)})
	}
	if processes {
		writerProcess(&pod, w)
	}
	pvcSpec := claimSpec(storageClass)
	service := headlessService("db")
	switch w {
	case StatefulSetKeepsPVCs, StatefulSetDeletesPVCs, StatefulSetTwoVolumes:
		sts := &appsv1.StatefulSet{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
			ObjectMeta: metav1.ObjectMeta{Name: "db", Labels: appLabels()},
			Spec: appsv1.StatefulSetSpec{
				Replicas: ptr.To(replicas), ServiceName: "db", PodManagementPolicy: appsv1.ParallelPodManagement,
				Selector:             &metav1.LabelSelector{MatchLabels: appLabels()},
				Template:             pod,
				VolumeClaimTemplates: claims,
			},
		}
		if w == StatefulSetDeletesPVCs {
			sts.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			}
		}
		return []client.Object{service, sts}, nil
	case DeploymentWithPVC:
		pvc := &corev1.PersistentVolumeClaim{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
			ObjectMeta: metav1.ObjectMeta{Name: deploymentClaim, Labels: appLabels()}, Spec: pvcSpec,
		}
		pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name},
		}}}
		dep := &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "db", Labels: appLabels()},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: appLabels()}, Template: pod,
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			},
		}
		return []client.Object{service, pvc, dep}, nil
	case Postgres, PostgresWAL:
		return postgresObjects(w, storageClass)
	}
	return nil, fmt.Errorf("unknown workload %q", w)
}

// writerProcess makes the pod template's writer a real process: the container runs
// `drover lab writer` (the image storage.WriterImage, which the lab kubelet maps to the drover
// binary) over the workload's PVCs at their mount paths (/data; /data then /log, its twins,
// for StatefulSetTwoVolumes), with its identity from the downward API, its
// interval from the pod's annotation, its status file in the directory the lab kubelet binds
// at storage.WriterStatusMountPath (the storage's, which the story's judge reads); the pod is
// labelled WriterLabel=process, so the storage writes nothing on its behalf, and it selects and
// tolerates the lab kubelet's node, where its process runs. The restricted Pod Security level
// still holds: nothing here names the machine's paths.
func writerProcess(pod *corev1.PodTemplateSpec, w Workload) {
	var args []string
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		claim := m.Name + "-$(" + labwriter.EnvPod + ")" // a StatefulSet's claim: <template>-<pod>
		if w == DeploymentWithPVC {
			claim = deploymentClaim
		}
		args = append(args, "--volume", claim+"="+m.MountPath)
	}
	pod.Labels[storage.WriterLabel] = storage.WriterProcess
	onLabKubelet(&pod.Spec)
	c := &pod.Spec.Containers[0]
	c.Image = storage.WriterImage
	c.Command = []string{"drover", "lab", "writer"}
	c.Args = args
	c.Env = append(labwriter.PodEnv(),
		corev1.EnvVar{Name: labwriter.EnvInterval, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			FieldPath: "metadata.annotations['" + storage.WriterIntervalAnnotation + "']"}}},
		corev1.EnvVar{Name: labwriter.EnvStatusDir, Value: storage.WriterStatusMountPath})
}

// appLabels select the application's pods, PVCs and Service: app=db (AppLabel).
func appLabels() map[string]string { return map[string]string{"app": "db"} }

// headlessService is the application's headless Service db, its port 5432 named port.
func headlessService(port string) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: "db", Labels: appLabels()},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: appLabels(),
			Ports: []corev1.ServicePort{{Name: port, Port: 5432}}},
	}
}

// claimSpec is the spec of the application's PVCs: 1Gi, ReadWriteOnce, of storageClass.
func claimSpec(storageClass string) corev1.PersistentVolumeClaimSpec {
	return corev1.PersistentVolumeClaimSpec{
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		StorageClassName: ptr.To(storageClass),
		Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}
}

// restrictedContainer is the security context the restricted Pod Security level asks of every
// container of the application: no privilege escalation, no capability.
func restrictedContainer() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// onLabKubelet places a pod whose containers run as processes on the lab kubelet's node: it
// selects and tolerates the node. Its processes never call the API server: no token, as a
// database's pod needs none (the lab's API servers run without the ServiceAccount admission
// plugin, so the pod names no ServiceAccount a token could be bound to).
func onLabKubelet(spec *corev1.PodSpec) {
	spec.NodeSelector = map[string]string{kubelet.NodeLabel: "true"}
	spec.Tolerations = []corev1.Toleration{{Key: kubelet.NodeLabel, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	spec.AutomountServiceAccountToken = ptr.To(false)
}
