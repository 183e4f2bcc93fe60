package kubelet

import (
	"context"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/drover-io/drover/internal/lab/pgsql"
)

// pgPod is a PostgreSQL pod as the lab's PostgreSQL workload runs it (internal/story, postgres.go):
// initdb into an empty data directory, then postgres as the machine's postgres user, its socket in
// a volume of its own, with PATH, PGDATA and PGHOST as a PostgreSQL image sets them.
func pgPod(pg pgsql.Install, ns, name string) *corev1.Pod {
	data, run := mountPath(ns, "pgdata"), mountPath(ns, "pgrun")
	env := []corev1.EnvVar{{Name: "PATH", Value: pg.PATH()}, {Name: "PGDATA", Value: data + "/db"}, {Name: "PGHOST", Value: run},
		{Name: "PGUSER", Value: pgsql.User}, {Name: "PGDATABASE", Value: "postgres"}}
	mounts := []corev1.VolumeMount{{Name: "data", MountPath: data}, {Name: "run", MountPath: run}}
	return &corev1.Pod{
		ObjectMeta: shellPod(ns, name, "").ObjectMeta,
		Spec: corev1.PodSpec{
			NodeName: DefaultNodeName, AutomountServiceAccountToken: ptr.To(false), TerminationGracePeriodSeconds: ptr.To[int64](10),
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To(pg.UID), RunAsGroup: ptr.To(pg.GID), FSGroup: ptr.To(pg.GID)},
			InitContainers: []corev1.Container{{Name: "initdb", Image: pgsql.ImageShell, Env: env, VolumeMounts: mounts,
				Command: []string{"sh", "-c", `exec initdb -D "$PGDATA" --wal-segsize=1 --auth=trust --username=postgres`}}},
			Containers: []corev1.Container{{Name: "postgres", Image: pgsql.ImageServer, Env: env, VolumeMounts: mounts,
				Command: []string{"postgres"}, Args: []string{"-D", "$(PGDATA)", "-c", "listen_addresses=", "-c", "unix_socket_directories=" + run,
					"-c", "shared_buffers=16MB", "-c", "max_connections=10"},
				ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
					Command: []string{"pg_isready", "-q"}}}}}},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
}

// TestExecRunsPostgreSQLsHooksInItsPod runs, through the API server as an exec hook would, the
// PostgreSQL example's hooks in a PostgreSQL pod the lab kubelet runs: a CHECKPOINT by psql over
// the pod's socket (BeforeSync), then pg_ctl stop -m fast (BeforeStop), which ends the server
// with a shutdown checkpoint, as its log says.
func TestExecRunsPostgreSQLsHooksInItsPod(t *testing.T) {
	g := NewWithT(t)
	pg, err := pgsql.Find()
	g.Expect(err).NotTo(HaveOccurred(), "PostgreSQL is needed for this test")
	ns := newNamespace(t, g)
	createPod(g, pgPod(pg, ns, "db"))
	readyPod(g, ns, "db")

	ctx := context.Background()
	res := execInPod(ctx, ns, "db", "postgres", false, "psql", "-X", "-c", "CHECKPOINT")
	g.Expect(res.err).NotTo(HaveOccurred(), "stderr: %s", res.stderr)
	g.Expect(res.stdout).To(Equal("CHECKPOINT\n"))

	// pg_ctl stop -W asks for the fast shutdown and returns: the server is the container's first
	// process, and an exec still running when it ends is killed with it, as in a container
	// (the next test). The stop that follows the hook waits for the pod to end.
	res = execInPod(ctx, ns, "db", "postgres", false, "sh", "-c", `pg_ctl stop -m fast -W -D "$PGDATA"`)
	g.Expect(res.err).NotTo(HaveOccurred(), "stdout: %s, stderr: %s", res.stdout, res.stderr)
	g.Expect(res.stdout).To(ContainSubstring("server shutting down"))
	g.Eventually(func(g Gomega) {
		log, err := os.ReadFile(LogPath(testLogDir, ns, "db", "postgres"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(log)).To(And(ContainSubstring("received fast shutdown request"),
			ContainSubstring("shutting down"), ContainSubstring("database system is shut down")))
	}).Should(Succeed())

}

// TestAnExecOutlivingTheContainersFirstProcessIsKilledWithIt execs a command that ends the
// container's first process and then waits: it is killed with every other process of the
// container's PID namespace, and the caller gets exit code 137 (128 + SIGKILL), as from runc.
func TestAnExecOutlivingTheContainersFirstProcessIsKilledWithIt(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, g)
	createPod(g, shellPod(ns, "short", "trap 'exit 0' TERM; while :; do sleep 0.2; done"))
	g.Eventually(func(g Gomega) {
		got := fetchPod(g, ns, "short")
		g.Expect(got.Status.ContainerStatuses).To(HaveLen(1))
		g.Expect(got.Status.ContainerStatuses[0].State.Running).NotTo(BeNil())
	}).Should(Succeed())
	res := execInPod(context.Background(), ns, "short", "sh", false, "sh", "-c", "kill -TERM 1; sleep 30; echo survived")
	g.Expect(res.exitCode).To(Equal(137), "stdout %q, stderr %q, err %v", res.stdout, res.stderr, res.err)
	g.Expect(res.stdout).NotTo(ContainSubstring("survived"))
}
