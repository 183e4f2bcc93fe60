package kubelet

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// secretMount is where probePod mounts its Secret: under the test's temporary directory, since a
// mount point is created (empty) on the machine's filesystem.
var secretMount string

// report is podprobe's REPORT line.
type report struct {
	Env         map[string]string `json:"env"`
	WorkDir     string            `json:"workDir"`
	Args        []string          `json:"args"`
	SANamespace string            `json:"saNamespace"`
	ConfigError string            `json:"configError"`
	GetOwnPod   string            `json:"getOwnPod"`
	ListSecrets string            `json:"listSecrets"`
	Files       map[string]string `json:"files"`
	Writes      map[string]string `json:"writes"`
	IDs         string            `json:"ids"`
}

// newNamespace creates a namespace with a ServiceAccount "probe" that may get pods (and nothing
// else) and a Secret "creds".
func newNamespace(t *testing.T, g Gomega) string {
	ctx := context.Background()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "kubelet-"}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	name := ns.Name
	_, err = cs.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = cs.RbacV1().Roles(name).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "get-pods"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = cs.RbacV1().RoleBindings(name).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "probe-get-pods"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "get-pods"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "probe", Namespace: name}},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = cs.CoreV1().Secrets(name).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds"},
		Data:       map[string][]byte{"password": []byte("s3cret")},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// probePod is a pod of the podprobe image on the kubelet's node, as a Deployment's template
// would describe drover: no command (the image's entrypoint), arguments with $(POD_IP), env from
// the downward API and a Secret, a Secret volume and an HTTP readiness probe.
func probePod(ns, name string) *corev1.Pod {
	fieldEnv := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName:                      DefaultNodeName,
			ServiceAccountName:            "probe",
			TerminationGracePeriodSeconds: ptr.To[int64](10),
			Volumes: []corev1.Volume{{Name: "creds", VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}}},
			Containers: []corev1.Container{{
				Name: "probe", Image: probeImage + ":v1",
				Args: []string{"--bind=$(POD_IP):8081", "--file=" + secretMount + "/password"},
				Env: []corev1.EnvVar{
					fieldEnv("POD_NAME", "metadata.name"), fieldEnv("POD_NAMESPACE", "metadata.namespace"),
					fieldEnv("NODE_NAME", "spec.nodeName"), fieldEnv("POD_IP", "status.podIP"),
					{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "password"}}},
					{Name: "LITERAL", Value: "plain"},
					{Name: "EXPANDED", Value: "name=$(POD_NAME)"},
				},
				WorkingDir:   "/tmp",
				VolumeMounts: []corev1.VolumeMount{{Name: "creds", MountPath: secretMount, ReadOnly: true}},
				ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{
					HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8081)}}},
			}},
		},
	}
}

func createPod(g Gomega, pod *corev1.Pod) {
	_, err := cs.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
}

// readyPod waits until the pod is Running and Ready and returns it.
func readyPod(g Gomega, ns, name string) *corev1.Pod {
	var pod *corev1.Pod
	g.Eventually(func(g Gomega) {
		var err error
		pod, err = cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
		g.Expect(pod.Status.ContainerStatuses).To(HaveLen(1))
		g.Expect(pod.Status.ContainerStatuses[0].Ready).To(BeTrue())
	}).Should(Succeed())
	return pod
}

// lastReport reads the last REPORT line that podprobe wrote to its log.
func lastReport(g Gomega, ns, name string) report {
	f, err := os.Open(LogPath(testLogDir, ns, name, "probe"))
	g.Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	var line string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if s, ok := strings.CutPrefix(sc.Text(), "REPORT "); ok {
			line = s
		}
	}
	g.Expect(line).NotTo(BeEmpty(), "podprobe wrote no REPORT line")
	var r report
	g.Expect(json.Unmarshal([]byte(line), &r)).To(Succeed())
	return r
}

func podState(ns, name string) (PodState, bool) {
	for _, p := range testKube.Pods() {
		if p.Namespace == ns && p.Name == name {
			return p, true
		}
	}
	return PodState{}, false
}

func TestNodeIsRegisteredReadyAndLeftToTheLabKubelet(t *testing.T) {
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		node, err := cs.CoreV1().Nodes().Get(context.Background(), DefaultNodeName, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(node.Annotations).NotTo(HaveKey("kwok.x-k8s.io/node"), "kwok must not manage the lab kubelet's node")
		g.Expect(node.Labels).To(HaveKeyWithValue(NodeLabel, "true"))
		g.Expect(node.Spec.Taints).To(ContainElement(HaveField("Key", NodeLabel)))
		g.Expect(node.Status.Conditions).To(ContainElement(And(
			HaveField("Type", corev1.NodeReady), HaveField("Status", corev1.ConditionTrue))))
		lease, err := cs.CoordinationV1().Leases(nodeLeaseNS).Get(context.Background(), DefaultNodeName, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(lease.Spec.RenewTime).NotTo(BeNil())
	}).Should(Succeed())
}

func TestPodRunsWithItsServiceAccountEnvironmentAndSecretVolume(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, g)
	createPod(g, probePod(ns, "probe"))
	pod := readyPod(g, ns, "probe")
	ip := netip.MustParseAddr(pod.Status.PodIP)
	g.Expect(DefaultPodCIDR.Contains(ip)).To(BeTrue(), "pod IP %s", ip)

	r := lastReport(g, ns, "probe")
	g.Expect(r.ConfigError).To(BeEmpty())
	g.Expect(r.GetOwnPod).To(Equal("ok"), "the ServiceAccount may get pods")
	g.Expect(r.ListSecrets).To(Equal("forbidden"), "the ServiceAccount may not list secrets")
	g.Expect(r.SANamespace).To(Equal(ns))
	g.Expect(r.Env).To(And(
		HaveKeyWithValue("POD_NAME", "probe"), HaveKeyWithValue("POD_NAMESPACE", ns),
		HaveKeyWithValue("NODE_NAME", DefaultNodeName), HaveKeyWithValue("POD_IP", ip.String()),
		HaveKeyWithValue("PASSWORD", "s3cret"), HaveKeyWithValue("LITERAL", "plain"),
		HaveKeyWithValue("EXPANDED", "name=probe"), HaveKeyWithValue("KUBERNETES_SERVICE_HOST", "127.0.0.1"),
		HaveKeyWithValue("HOSTNAME", "probe")))
	g.Expect(r.Args).To(ContainElement("--bind=" + ip.String() + ":8081"))
	g.Expect(r.WorkDir).To(Equal("/tmp"))
	g.Expect(r.Files).To(HaveKeyWithValue(secretMount+"/password", "s3cret"))

	_, err := os.Stat(secretMount + "/password")
	g.Expect(errors.Is(err, os.ErrNotExist)).To(BeTrue(), "the secret is mounted only in the pod's mount namespace")
}

func TestSecretVolumeFollowsTheSecret(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, g)
	createPod(g, probePod(ns, "probe"))
	pod := readyPod(g, ns, "probe")
	secret, err := cs.CoreV1().Secrets(ns).Get(context.Background(), "creds", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	secret.Data["password"] = []byte("rotated")
	_, err = cs.CoreV1().Secrets(ns).Update(context.Background(), secret, metav1.UpdateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	url := "http://" + pod.Status.PodIP + ":8081/file?path=" + secretMount + "/password"
	g.Eventually(func(g Gomega) {
		resp, err := http.Get(url) //nolint:gosec // the test's own pod on loopback
		g.Expect(err).NotTo(HaveOccurred())
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		g.Expect(string(body)).To(Equal("rotated"))
	}).Should(Succeed())
}

func TestKilledProcessIsRestartedAndCounted(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, g)
	createPod(g, probePod(ns, "probe"))
	readyPod(g, ns, "probe")
	st, ok := podState(ns, "probe")
	g.Expect(ok).To(BeTrue())
	pid := st.Containers[0].PID
	g.Expect(pid).NotTo(BeZero())
	g.Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed())

	g.Eventually(func(g Gomega) {
		pod, err := cs.CoreV1().Pods(ns).Get(context.Background(), "probe", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		c := pod.Status.ContainerStatuses[0]
		g.Expect(c.RestartCount).To(BeEquivalentTo(1))
		g.Expect(c.Ready).To(BeTrue())
		g.Expect(c.LastTerminationState.Terminated).NotTo(BeNil())
		g.Expect(c.LastTerminationState.Terminated.Signal).To(BeEquivalentTo(syscall.SIGKILL))
	}).Should(Succeed())
	st, _ = podState(ns, "probe")
	g.Expect(st.Containers[0].PID).NotTo(Or(BeZero(), Equal(pid)))
	g.Expect(st.Containers[0].Restarts).To(BeEquivalentTo(1))
}

func TestDeletedPodStopsItsProcessAndIsRemoved(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, g)
	createPod(g, probePod(ns, "probe"))
	readyPod(g, ns, "probe")
	st, _ := podState(ns, "probe")
	pid := st.Containers[0].PID
	g.Expect(cs.CoreV1().Pods(ns).Delete(context.Background(), "probe", metav1.DeleteOptions{})).To(Succeed())

	g.Eventually(func() bool {
		_, err := cs.CoreV1().Pods(ns).Get(context.Background(), "probe", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}).Should(BeTrue())
	g.Expect(syscall.Kill(pid, 0)).To(MatchError(syscall.ESRCH), "the process must be gone")
	data, err := os.ReadFile(LogPath(testLogDir, ns, "probe", "probe"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(ContainSubstring("SIGTERM received"), "the process gets SIGTERM first")
}

func TestPodOfAnUnknownImageIsReportedAsNotPullable(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, g)
	pod := probePod(ns, "other")
	pod.Spec.Containers[0].Image = "docker.io/library/nginx:1.29"
	createPod(g, pod)
	g.Eventually(func(g Gomega) {
		got, err := cs.CoreV1().Pods(ns).Get(context.Background(), "other", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Status.ContainerStatuses).To(HaveLen(1))
		w := got.Status.ContainerStatuses[0].State.Waiting
		g.Expect(w).NotTo(BeNil())
		g.Expect(w.Reason).To(Equal("ErrImagePull"))
		g.Expect(w.Message).To(ContainSubstring(probeImage))
	}).Should(Succeed())
}

func TestStoppingTheKubeletEndsItsProcesses(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, g)
	tmp := t.TempDir()
	k, err := New(Options{Config: cfg, Images: map[string]string{"podprobe": probeBin}, NodeName: "lab-drover-2",
		PodCIDR: netip.MustParsePrefix("127.101.0.0/24"), StateDir: filepath.Join(tmp, "state"), LogDir: testLogDir})
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	pod := probePod(ns, "second")
	pod.Spec.NodeName = k.NodeName()
	createPod(g, pod)
	got := readyPod(g, ns, "second")
	g.Expect(got.Status.PodIP).To(HavePrefix("127.101.0."))

	states, err := ReadState(filepath.Join(tmp, "state"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(states).To(HaveLen(1))
	pid := states[0].Containers[0].PID
	g.Expect(pid).NotTo(BeZero())
	cancel()
	g.Expect(<-done).To(Succeed())
	g.Expect(syscall.Kill(pid, 0)).To(MatchError(syscall.ESRCH))
}

func TestPodsBindingAllAddressesOnOnePortDoNotClash(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, g)
	for _, name := range []string{"first", "second"} {
		pod := probePod(ns, name)
		c := &pod.Spec.Containers[0]
		c.Args = []string{"--bind=:8081"}
		c.Ports = []corev1.ContainerPort{{Name: "probes", ContainerPort: 8081}}
		c.ReadinessProbe.HTTPGet.Port = intstr.FromString("probes")
		createPod(g, pod)
	}
	for _, name := range []string{"first", "second"} {
		pod := readyPod(g, ns, name)
		resp, err := http.Get("http://" + pod.Status.PodIP + ":8081/readyz") //nolint:gosec // the test's own pod on loopback
		g.Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		g.Expect(lastReport(g, ns, name).Args).To(Equal([]string{"--bind=" + pod.Status.PodIP + ":8081"}))
	}
}

func TestFailingLivenessProbeRestartsTheProcess(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, g)
	pod := probePod(ns, "sick")
	c := &pod.Spec.Containers[0]
	c.Args = append(c.Args, "--unhealthy-after=2s")
	c.LivenessProbe = &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 2, ProbeHandler: corev1.ProbeHandler{
		HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8081)}}}
	createPod(g, pod)
	g.Eventually(func(g Gomega) {
		got, err := cs.CoreV1().Pods(ns).Get(context.Background(), "sick", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Status.ContainerStatuses).To(HaveLen(1))
		g.Expect(got.Status.ContainerStatuses[0].RestartCount).To(BeNumerically(">=", 1))
		g.Expect(got.Status.ContainerStatuses[0].LastTerminationState.Terminated).NotTo(BeNil())
	}).Should(Succeed())
}

// TestProjectedServiceAccountVolumeGivesInClusterConfig runs a pod as the ServiceAccount
// admission plugin would have changed it: a projected kube-api-access volume (token, the
// kube-root-ca.crt ConfigMap, the namespace) mounted at the ServiceAccount path.
func TestProjectedServiceAccountVolumeGivesInClusterConfig(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, g)
	_, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"},
		Data:       map[string]string{"ca.crt": string(cfg.CAData)},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	pod := probePod(ns, "projected")
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{
		Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		}}}})
	pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{
		Name: "kube-api-access", MountPath: serviceAccountDir, ReadOnly: true})
	createPod(g, pod)
	readyPod(g, ns, "projected")
	r := lastReport(g, ns, "projected")
	g.Expect(r.ConfigError).To(BeEmpty())
	g.Expect(r.GetOwnPod).To(Equal("ok"))
	g.Expect(r.ListSecrets).To(Equal("forbidden"))
	g.Expect(r.SANamespace).To(Equal(ns))
}

func TestReadOnlyRootFilesystemLeavesOnlyVolumesWritable(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, g)
	pod := probePod(ns, "readonly")
	tmp := t.TempDir()
	outside, scratch := filepath.Join(tmp, "written-by-pod"), filepath.Join(tmp, "scratch")
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "scratch", MountPath: scratch})
	c.Args = append(c.Args, "--write="+scratch+"/file,"+outside)
	c.SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true)}
	createPod(g, pod)
	readyPod(g, ns, "readonly")
	r := lastReport(g, ns, "readonly")
	g.Expect(r.Writes).To(HaveKeyWithValue(scratch+"/file", "ok"))
	g.Expect(r.Writes[outside]).To(ContainSubstring("read-only file system"))
	_, err := os.Stat(outside)
	g.Expect(os.IsNotExist(err)).To(BeTrue())
}

func mustAddr(s string) netip.Addr {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}
	}
	return a
}

// TestContainerWaitsForTheConfigMapItsEnvNames follows drover's agent, whose env names a
// ConfigMap that joining the cluster creates later.
func TestContainerWaitsForTheConfigMapItsEnvNames(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, g)
	pod := probePod(ns, "waiting")
	pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, corev1.EnvVar{Name: "CLUSTER",
		ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "joined"}, Key: "cluster-name"}}})
	createPod(g, pod)
	g.Eventually(func(g Gomega) {
		got, err := cs.CoreV1().Pods(ns).Get(ctx, "waiting", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Status.ContainerStatuses).To(HaveLen(1))
		w := got.Status.ContainerStatuses[0].State.Waiting
		g.Expect(w).NotTo(BeNil())
		g.Expect(w.Reason).To(Equal("CreateContainerConfigError"))
		g.Expect(w.Message).To(ContainSubstring("joined"))
	}).Should(Succeed())

	_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "joined"},
		Data: map[string]string{"cluster-name": "east"}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	got := readyPod(g, ns, "waiting")
	g.Expect(got.Status.ContainerStatuses[0].RestartCount).To(BeZero(), "a start that failed is not a restart")
}

// TestExternalNameServiceOnAPodIPReachesItsTargetPort follows the fence webhook: its Service
// (port 443, targetPort "fence") made ExternalName on the agent's pod IP by the lab.
func TestExternalNameServiceOnAPodIPReachesItsTargetPort(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t, g)
	pod := probePod(ns, "served")
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "probes", ContainerPort: 8081}}
	createPod(g, pod)
	ip := readyPod(g, ns, "served").Status.PodIP
	_, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "served"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: ip,
			Ports: []corev1.ServicePort{{Name: "https", Port: 18443, TargetPort: intstr.FromString("probes")}}},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		resp, err := http.Get("http://" + ip + ":18443/readyz") //nolint:gosec // the test's own pod on loopback
		g.Expect(err).NotTo(HaveOccurred())
		defer func() { _ = resp.Body.Close() }()
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	}).Should(Succeed())

	g.Expect(cs.CoreV1().Services(ns).Delete(ctx, "served", metav1.DeleteOptions{})).To(Succeed())
	g.Eventually(func() error {
		resp, err := http.Get("http://" + ip + ":18443/readyz") //nolint:gosec // the test's own pod on loopback
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}).Should(HaveOccurred(), "the forward ends with its Service")
}
