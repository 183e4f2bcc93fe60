package story

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/pod-security-admission/api"

	"github.com/drover-io/drover/internal/lab/kubelet"
	"github.com/drover-io/drover/internal/lab/pgsql"
	"github.com/drover-io/drover/internal/podsecurity"
)

func TestThePostgresWorkloadRunsPostgreSQLAsItsUserWithItsDataOnThePVCUnderRestrictedPodSecurity(t *testing.T) {
	g := NewWithT(t)
	pg := pgsql.Install{BinDir: "/opt/pg/bin", UID: 101, GID: 104}
	objs := postgresManifests("lab-block", pg)
	g.Expect(objs).To(HaveLen(2))
	pod := podTemplate(g, objs)
	restricted := api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}
	g.Expect(podsecurity.Violations(restricted, &pod.ObjectMeta, &pod.Spec)).To(BeEmpty(), "the restricted Pod Security level admits the pods")

	sc := pod.Spec.SecurityContext
	g.Expect(*sc.RunAsUser).To(BeEquivalentTo(101), "PostgreSQL runs as its own user, never root")
	g.Expect(*sc.FSGroup).To(BeEquivalentTo(104))
	g.Expect(*sc.FSGroupChangePolicy).To(Equal(corev1.FSGroupChangeOnRootMismatch),
		"a recursive fsGroup change would make the data directory group-writable, which PostgreSQL refuses")
	g.Expect(pod.Spec.NodeSelector).To(HaveKeyWithValue(kubelet.NodeLabel, "true"), "its processes run on the lab kubelet's node")
	g.Expect(pod.Spec.InitContainers).To(HaveLen(1))
	initdb := pod.Spec.InitContainers[0]
	g.Expect(initdb.Image).To(Equal(pgsql.ImageShell))
	script := initdb.Command[2]
	g.Expect(script).To(ContainSubstring(`if [ -n "$(ls -A "$PGDATA" 2>/dev/null)" ]`), "initdb only into an empty directory")
	g.Expect(script).To(ContainSubstring(`chmod 0700 "$PGDATA"`), "a data directory an fsGroup change opened is closed again")
	g.Expect(script).To(ContainSubstring("initdb -D \"$PGDATA\" --wal-segsize=1 --data-checksums --auth=trust"))
	g.Expect(initdb.Env).To(ContainElements(corev1.EnvVar{Name: "PATH", Value: pg.PATH()}, corev1.EnvVar{Name: "PGDATA", Value: pgData}))
	g.Expect(strings.HasPrefix(pgData, pgMount+"/")).To(BeTrue(), "the data directory is a subdirectory of the PVC")

	g.Expect(pod.Spec.Containers).To(HaveLen(2))
	server, bench := pod.Spec.Containers[0], pod.Spec.Containers[1]
	g.Expect(server.Image).To(Equal(pgsql.ImageServer))
	g.Expect(server.Args).To(ContainElements("listen_addresses=$(POD_IP)", "unix_socket_directories="+pgSocketDir))
	g.Expect(server.ReadinessProbe.Exec.Command).To(Equal([]string{"pg_isready", "-q"}))
	g.Expect(bench.Image).To(Equal(pgsql.ImageShell))
	g.Expect(bench.Command[2]).To(And(ContainSubstring("trap 'stop=1' TERM"), ContainSubstring("pgbench -i -q -s 1"),
		ContainSubstring(`-D run="$run" -l --log-prefix="$PGBENCH_LOG_DIR/$run"`), ContainSubstring("filler) VALUES")))
	g.Expect(bench.Env).To(ContainElement(corev1.EnvVar{Name: "PGBENCH_LOG_DIR", Value: "/run/drover-lab/writers/$(POD_NAMESPACE).$(POD_NAME).pgbench"}))
	g.Expect(bench.VolumeMounts).To(ConsistOf(HaveField("MountPath", pgSocketDir)), "pgbench reaches the server by its socket")
	g.Expect(*pod.Spec.TerminationGracePeriodSeconds).To(BeNumerically(">", pgbenchRun), "pgbench's run ends within the grace")
}

func TestThePostgresWALWorkloadPutsPgWALOnASecondPVCOfTheApplication(t *testing.T) {
	g := NewWithT(t)
	pg := pgsql.Install{BinDir: "/opt/pg/bin", UID: 101, GID: 104}
	objs := postgresManifests("lab-block", pg)
	sts := objs[1].(*appsv1.StatefulSet)
	walOnItsOwnVolume(sts, "lab-block")

	g.Expect(sts.Spec.VolumeClaimTemplates).To(HaveLen(2))
	wal := sts.Spec.VolumeClaimTemplates[1]
	g.Expect(wal.Name).To(Equal("wal"))
	g.Expect(wal.Labels).To(Equal(AppLabel), "the DRPlacementControl's pvcSelector and a group of app=db select it with data")
	g.Expect(*wal.Spec.StorageClassName).To(Equal("lab-block"))
	pod := &sts.Spec.Template
	restricted := api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}
	g.Expect(podsecurity.Violations(restricted, &pod.ObjectMeta, &pod.Spec)).To(BeEmpty())
	mount := corev1.VolumeMount{Name: "wal", MountPath: pgWALMount}
	env := corev1.EnvVar{Name: "PGWAL", Value: pgWAL}
	initdb, server, bench := pod.Spec.InitContainers[0], pod.Spec.Containers[0], pod.Spec.Containers[1]
	for _, c := range []corev1.Container{initdb, server} {
		g.Expect(c.VolumeMounts).To(ContainElements(HaveField("Name", "data"), mount), "%s mounts both volumes", c.Name)
		g.Expect(c.Env).To(ContainElement(env))
	}
	g.Expect(bench.VolumeMounts).NotTo(ContainElement(HaveField("Name", "wal")), "pgbench reaches the server by its socket only")
	g.Expect(strings.HasPrefix(pgWAL, pgWALMount+"/")).To(BeTrue(), "the log's directory is a subdirectory of its PVC")
	g.Expect(strings.HasPrefix(pgWAL, pgMount+"/")).To(BeFalse(), "the log is not on the data PVC")
	g.Expect(initdb.Command[2]).To(ContainSubstring(`${PGWAL:+--waldir="$PGWAL"}`), "initdb puts pg_wal on the wal PVC, a symlink in the data directory")
	g.Expect(initdb.Command[2]).To(ContainSubstring(`chmod 0700 "$PGWAL"`))

	plain := postgresManifests("lab-block", pg)[1].(*appsv1.StatefulSet)
	g.Expect(plain.Spec.VolumeClaimTemplates).To(HaveLen(1), "the Postgres workload keeps its one PVC")
	g.Expect(plain.Spec.Template.Spec.InitContainers[0].Env).NotTo(ContainElement(HaveField("Name", "PGWAL")))
}
