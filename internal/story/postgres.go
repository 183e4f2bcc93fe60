package story

import (
	"fmt"
	"path"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/lab/pgsql"
	"github.com/drover-io/drover/internal/lab/storage"
)

// Postgres is a StatefulSet of one PostgreSQL server (the machine's PostgreSQL 15, run by the
// lab kubelet) with its data directory on its PVC and a pgbench sidecar that commits
// transactions continuously, each logged; the judge (pgjudge.go) checks the database after
// every failover and relocation by its own invariants.
const Postgres Workload = "postgres"

// PostgresWAL is the Postgres workload with PostgreSQL's write-ahead log on a volume of its own:
// a second claim template, wal, mounted at pgWALMount, with pg_wal in the data directory a
// symlink into it (initdb --waldir, as the PostgreSQL image's POSTGRES_INITDB_WALDIR does), a
// layout databases use to put the log on faster storage. Its data directory and its log must
// come from one instant: restored from two, PostgreSQL does not find the checkpoint its control
// file names, or starts with data pages its log does not describe. The same judge checks it.
const PostgresWAL Workload = "postgres-wal"

// isPostgres says whether w is PostgreSQL under pgbench (Postgres, PostgresWAL), which the
// PostgreSQL judge checks.
func (w Workload) isPostgres() bool { return w == Postgres || w == PostgresWAL }

// Paths of the PostgreSQL pod, those of the PostgreSQL image: the PVC at pgMount with the data
// directory one level down (a volume's root may hold lost+found), the server's socket in an
// emptyDir shared with pgbench.
const (
	pgMount     = "/var/lib/postgresql/data"
	pgData      = pgMount + "/pgdata"
	pgSocketDir = "/var/run/postgresql"
	// pgWALMount is where PostgresWAL mounts its wal PVC; pgWAL the log's directory there, one
	// level down as the data directory is.
	pgWALMount = "/var/lib/postgresql/wal"
	pgWAL      = pgWALMount + "/pg_wal"
	// pgbenchRun is how long one pgbench run lasts: on SIGTERM the sidecar lets the run end (and
	// flush its log) and starts no other; the pod's grace covers it.
	pgbenchRun = 10
	// pgbenchClients is how many sessions pgbench runs.
	pgbenchClients = 2
)

// PgbenchLogDir is where the pgbench sidecar of pod namespace/name logs its runs in a cluster's
// lab storage directory: the writers' status directory, which the lab kubelet binds into every
// container (storage.WriterStatusMountPath) and which outlives the pod and its cluster's stop.
func PgbenchLogDir(dataDir, namespace, pod string) string {
	return path.Join(storage.WriterStatusDir(dataDir), pgbenchLogDirName(namespace, pod))
}

func pgbenchLogDirName(namespace, pod string) string { return namespace + "." + pod + ".pgbench" }

// initdbScript initialises the data directory when it is missing or empty, and only then: the
// PVC of a failover's target holds the source's database, which PostgreSQL recovers. A data
// directory there is made the user's alone again, as the PostgreSQL image's entrypoint does
// (docker-library/postgres docker-entrypoint.sh, chmod 00700 "$PGDATA"): a volume whose root
// does not match the pod's fsGroup (a VolSync restore keeps the destination's own root) gets the
// kubelet's recursive fsGroup change, which opens the data directory to the group, and
// PostgreSQL refuses to start on a group-writable one. With PGWAL set (PostgresWAL) initdb puts
// the log there, pg_wal a symlink to it, and the log's directory is made the user's alone too.
const initdbScript = `set -e
if [ -n "$(ls -A "$PGDATA" 2>/dev/null)" ]; then
  chmod 0700 "$PGDATA"
  if [ -n "${PGWAL:-}" ] && [ -d "$PGWAL" ]; then chmod 0700 "$PGWAL"; fi
  echo "$PGDATA holds a database: no initdb"
  exit 0
fi
exec initdb -D "$PGDATA" --wal-segsize=1 --data-checksums --auth=trust --username=postgres ${PGWAL:+--waldir="$PGWAL"}`

// pgbenchScript waits for the server, initialises pgbench's tables once (pgbench_ready marks a
// complete initialisation; pgbench -i starts by dropping what an interrupted one left), and runs
// pgbench in runs of pgbenchRun seconds, each tagged and logged by its id (pgsql.TaggedTPCB,
// pgsql.ReadRuns), until SIGTERM, which it lets the current run finish.
var pgbenchScript = fmt.Sprintf(`stop=
trap 'stop=1' TERM
until pg_isready -q; do sleep 0.5; done
if [ "$(psql -XAtqc "SELECT to_regclass('pgbench_ready') IS NOT NULL")" != t ]; then
  pgbench -i -q -s %[1]d && psql -Xqc 'CREATE EXTENSION IF NOT EXISTS amcheck' -c 'CREATE TABLE pgbench_ready ()' || exit 1
fi
mkdir -p "$PGBENCH_LOG_DIR"
cat > %[2]s/tpcb-tagged.sql <<'SQL'
%[3]sSQL
while [ -z "$stop" ]; do
  run=$(date +%%s%%N)
  pgbench -n -c %[4]d -T %[5]d -f %[2]s/tpcb-tagged.sql -D run="$run" -l --log-prefix="$PGBENCH_LOG_DIR/$run" >/dev/null ||
    { [ -n "$stop" ] || sleep 1; }
done`, pgsql.Scale, pgSocketDir, pgsql.TaggedTPCB, pgbenchClients, pgbenchRun)

// postgresObjects are the objects of workload w (Postgres or PostgresWAL), with PostgreSQL
// found on this machine.
func postgresObjects(w Workload, storageClass string) ([]client.Object, error) {
	pg, err := pgsql.Find()
	if err != nil {
		return nil, err
	}
	objs := postgresManifests(storageClass, pg)
	if w == PostgresWAL {
		walOnItsOwnVolume(objs[1].(*appsv1.StatefulSet), storageClass)
	}
	return objs, nil
}

// walOnItsOwnVolume makes the Postgres workload's StatefulSet PostgresWAL's: a second claim
// template, wal, of storageClass and the application's labels (so the DRPlacementControl's
// pvcSelector and a consistency group of app=db select it with data), mounted at pgWALMount in
// initdb and postgres, which initdb puts the log into (PGWAL, pg_wal a symlink to it).
func walOnItsOwnVolume(sts *appsv1.StatefulSet, storageClass string) {
	sts.Spec.VolumeClaimTemplates = append(sts.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "wal", Labels: appLabels()}, Spec: claimSpec(storageClass),
	})
	spec := &sts.Spec.Template.Spec
	for _, c := range []*corev1.Container{&spec.InitContainers[0], &spec.Containers[0]} {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "wal", MountPath: pgWALMount})
		c.Env = append(c.Env, corev1.EnvVar{Name: "PGWAL", Value: pgWAL})
	}
}

// postgresManifests are the Postgres workload's objects, without a namespace: a headless
// Service and the StatefulSet db of one replica, its PVC data of storageClass, its pods on the
// lab kubelet's node as PostgreSQL's user (pg: found on this machine) with its group as
// fsGroup, changed only when the volume's root does not match (PostgreSQL refuses a data
// directory others in its group may write). The restricted Pod Security level holds.
func postgresManifests(storageClass string, pg pgsql.Install) []client.Object {
	service := headlessService("postgres")
	sts := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "db", Labels: appLabels()},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](1), ServiceName: "db", Selector: &metav1.LabelSelector{MatchLabels: appLabels()},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: appLabels()}, Spec: postgresPod(pg)},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: appLabels()}, Spec: claimSpec(storageClass),
			}},
		},
	}
	return []client.Object{service, sts}
}

// postgresPod is the pod of the Postgres workload: initdb (initContainer), postgres, pgbench.
func postgresPod(pg pgsql.Install) corev1.PodSpec {
	restricted := restrictedContainer()
	env := []corev1.EnvVar{{Name: "PATH", Value: pg.PATH()}, {Name: "PGDATA", Value: pgData}, {Name: "PGHOST", Value: pgSocketDir},
		{Name: "PGUSER", Value: pgsql.User}, {Name: "PGDATABASE", Value: "postgres"}}
	data := corev1.VolumeMount{Name: "data", MountPath: pgMount}
	socket := corev1.VolumeMount{Name: "run", MountPath: pgSocketDir}
	podEnv := []corev1.EnvVar{
		{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
	}
	spec := corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(pg.UID), RunAsGroup: ptr.To(pg.GID), FSGroup: ptr.To(pg.GID),
			FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch),
			SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		TerminationGracePeriodSeconds: ptr.To[int64](3 * pgbenchRun),
		InitContainers: []corev1.Container{{
			Name: "initdb", Image: pgsql.ImageShell, Command: []string{"sh", "-c", initdbScript},
			Env: env, VolumeMounts: []corev1.VolumeMount{data}, SecurityContext: restricted,
		}},
		Containers: []corev1.Container{{
			Name: "postgres", Image: pgsql.ImageServer, Command: []string{"postgres"},
			Args: []string{"-D", "$(PGDATA)", "-c", "listen_addresses=$(POD_IP)", "-c", "unix_socket_directories=" + pgSocketDir,
				"-c", "shared_buffers=16MB", "-c", "max_connections=20", "-c", "max_wal_size=32MB", "-c", "min_wal_size=4MB"},
			Env: append(podEnv, env...), VolumeMounts: []corev1.VolumeMount{data, socket}, SecurityContext: restricted,
			Ports: []corev1.ContainerPort{{Name: "postgres", ContainerPort: 5432}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"pg_isready", "-q"}}},
				PeriodSeconds: 1, TimeoutSeconds: 5},
		}, {
			Name: "pgbench", Image: pgsql.ImageShell, Command: []string{"sh", "-c", pgbenchScript},
			Env: append(append(podEnv, env...), corev1.EnvVar{Name: "PGBENCH_LOG_DIR",
				Value: storage.WriterStatusMountPath + "/" + pgbenchLogDirName("$(POD_NAMESPACE)", "$(POD_NAME)")}),
			VolumeMounts: []corev1.VolumeMount{socket}, SecurityContext: restricted,
		}},
		Volumes: []corev1.Volume{
			{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		},
	}
	onLabKubelet(&spec)
	return spec
}
