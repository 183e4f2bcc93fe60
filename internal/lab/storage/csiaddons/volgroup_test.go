package csiaddons_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/records"
	"github.com/drover-io/drover/internal/lab/storage"
	"github.com/drover-io/drover/internal/lab/storage/driver"
	"github.com/drover-io/drover/internal/lab/storage/state"
	"github.com/drover-io/drover/internal/lab/storage/storagetest"
)

// groupLabel selects the PVCs of the tests' groups.
const groupLabel = "app"

// twins is a namespace with a VolumeReplicationClass and a VolumeGroupReplicationClass on both
// clusters, two lab-block PVCs "a" and "b" on east labelled app=db, and a lab writer pod that
// commits record n to a, then to b, every few milliseconds: on any one instant of the two
// volumes, b ≤ a ≤ b+1 (records.CheckTwins).
type twins struct {
	ns, class, groupClass string
	handles               map[string]string
	writer                string
}

func newTwins(g Gomega, ctx context.Context, east, west client.Client, prefix string, interval time.Duration) twins {
	tw := twins{ns: prefix + "-" + rand.String(5), handles: map[string]string{}}
	c := replicationClass("lab-block-"+tw.ns, interval)
	gc := &replicationv1alpha1.VolumeGroupReplicationClass{
		ObjectMeta: metav1.ObjectMeta{Name: "lab-block-group-" + tw.ns},
		Spec:       replicationv1alpha1.VolumeGroupReplicationClassSpec{Provisioner: lab.BlockDriver},
	}
	for _, cl := range []client.Client{east, west} {
		createNamespace(g, ctx, cl, tw.ns)
		g.Expect(cl.Create(ctx, c.DeepCopy())).To(Succeed())
		g.Expect(cl.Create(ctx, gc.DeepCopy())).To(Succeed())
	}
	tw.class, tw.groupClass = c.Name, gc.Name
	for _, name := range []string{"a", "b"} {
		pvc := blockPVC(tw.ns, name)
		pvc.Labels = map[string]string{groupLabel: "db"}
		g.Expect(east.Create(ctx, pvc)).To(Succeed())
		tw.handles[name] = boundHandle(g, ctx, east, tw.ns, name)
	}
	pod := storagetest.WriterPod(tw.ns, "app", "a", 10*time.Millisecond)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "b", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "b"},
	}})
	g.Expect(east.Create(ctx, pod)).To(Succeed())
	g.Expect(east.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
	tw.writer = storage.WriterID(pod)
	g.Eventually(func(g Gomega) {
		g.Expect(storagetest.WriterRecords(g, volumeDir(lab.East, tw.handles["b"]), tw.writer).LastSeq).To(BeNumerically(">", 10))
	}).Should(Succeed(), "the writer commits to both volumes on east")
	return tw
}

func volumeGroupReplication(tw twins, state replicationv1alpha1.ReplicationState) *replicationv1alpha1.VolumeGroupReplication {
	return &replicationv1alpha1.VolumeGroupReplication{
		ObjectMeta: metav1.ObjectMeta{Namespace: tw.ns, Name: "db"},
		Spec: replicationv1alpha1.VolumeGroupReplicationSpec{
			VolumeGroupReplicationClassName: tw.groupClass,
			VolumeReplicationClassName:      tw.class,
			Source: replicationv1alpha1.VolumeGroupReplicationSource{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{groupLabel: "db"}},
			},
			ReplicationState: state,
		},
	}
}

// groupHandle waits until east's group has a handle and returns it.
func groupHandle(g Gomega, ctx context.Context, east client.Client, ns string) (string, *replicationv1alpha1.VolumeGroupReplicationContent) {
	content := &replicationv1alpha1.VolumeGroupReplicationContent{}
	g.Eventually(func(g Gomega) {
		vgr := &replicationv1alpha1.VolumeGroupReplication{}
		g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, vgr)).To(Succeed())
		g.Expect(vgr.Spec.VolumeGroupReplicationContentName).NotTo(BeEmpty())
		g.Expect(east.Get(ctx, client.ObjectKey{Name: vgr.Spec.VolumeGroupReplicationContentName}, content)).To(Succeed())
		g.Expect(content.Spec.VolumeGroupReplicationHandle).NotTo(BeEmpty())
	}).Should(Succeed(), "the group is created")
	return content.Spec.VolumeGroupReplicationHandle, content
}

func storageDir(cluster string) string { return filepath.Join(testLab.Dir(), cluster, "storage") }

func groupState(g Gomega, cluster, handle string) state.ImageState {
	st, err := state.Read(state.GroupPath(storageDir(cluster), handle))
	g.Expect(err).NotTo(HaveOccurred())
	return st
}

func intentPending(g Gomega, cluster, handle string) bool {
	ok, err := driver.Exists(state.GroupIntentPath(storageDir(cluster), handle))
	g.Expect(err).NotTo(HaveOccurred())
	return ok
}

// lastRecords reads the writer's last record in the two volumes of a cluster.
func lastRecords(g Gomega, cluster string, tw twins) (a, b records.WriterReport) {
	return storagetest.WriterRecords(g, volumeDir(cluster, tw.handles["a"]), tw.writer),
		storagetest.WriterRecords(g, volumeDir(cluster, tw.handles["b"]), tw.writer)
}

// sameTime reports whether two optional times are equal.
func sameTime(x, y *time.Time) bool {
	return (x == nil && y == nil) || (x != nil && y != nil && x.Equal(*y))
}

// peerPoints samples west's copies of the twins every time west's copy changes (changed says
// when, from the state read before and after), n times, and returns how many samples broke the
// twin invariant. A sample is kept only when west's copies did not change while it was read
// (stable), so that it is what west held at one instant.
func peerPoints(t *testing.T, g Gomega, tw twins, n int, what string, stable func() (key string, ok bool)) (broken int) {
	seen := map[string]bool{}
	deadline := time.Now().Add(time.Duration(n)*5*time.Second + 30*time.Second)
	for len(seen) < n {
		g.Expect(time.Now().Before(deadline)).To(BeTrue(), "%s: %d of %d points seen on west", what, len(seen), n)
		before, ok := stable()
		if !ok || seen[before] {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		a, b := lastRecords(g, lab.West, tw)
		if after, ok := stable(); !ok || after != before {
			continue // west's copies changed while they were read
		}
		seen[before] = true
		err := records.CheckTwins(a, b)
		if err != nil {
			broken++
		}
		t.Logf("%s: point %d on west: a ends at %d, b at %d: twin invariant %s", what, len(seen), a.LastSeq, b.LastSeq, verdict(err))
	}
	return broken
}

func verdict(err error) string {
	if err != nil {
		return "BROKEN"
	}
	return "holds"
}

// TestGroupMirrorKeepsTheTwinsOfOneInstant: a writer commits each record to volume a and then to
// volume b. Mirrored one volume at a time, each on its own schedule (volume b half an interval
// after volume a, as two VolumeReplications created apart), west's copies are of two instants and
// break b ≤ a ≤ b+1; mirrored as a VolumeGroupReplication, every one of the points west receives
// keeps it. The two are mirrored side by side, each in its own namespace.
func TestGroupMirrorKeepsTheTwinsOfOneInstant(t *testing.T) {
	const interval, points = time.Second, 15
	var brokenPerVolume, brokenGroup int
	t.Run("mirrors", func(t *testing.T) {
		t.Run("per-volume", func(t *testing.T) {
			t.Parallel()
			g, ctx := twinsTest(t)
			east, west := volRepClient(g, lab.East), volRepClient(g, lab.West)
			perVolume := newTwins(g, ctx, east, west, "twins-volrep", interval)
			g.Expect(east.Create(ctx, volumeReplication(perVolume.ns, "a", perVolume.class, replicationv1alpha1.Primary))).To(Succeed())
			time.Sleep(interval / 2)
			g.Expect(east.Create(ctx, volumeReplication(perVolume.ns, "b", perVolume.class, replicationv1alpha1.Primary))).To(Succeed())
			brokenPerVolume = peerPoints(t, g, perVolume, points, "per volume", func() (string, bool) {
				a, b := imageState(g, lab.West, perVolume.handles["a"]), imageState(g, lab.West, perVolume.handles["b"])
				if a.LastSyncTime == nil || b.LastSyncTime == nil {
					return "", false
				}
				return a.LastSyncTime.String() + "/" + b.LastSyncTime.String(), true
			})
		})
		t.Run("group", func(t *testing.T) {
			t.Parallel()
			g, ctx := twinsTest(t)
			east, west := volRepClient(g, lab.East), volRepClient(g, lab.West)
			group := newTwins(g, ctx, east, west, "twins-vgr", interval)
			g.Expect(east.Create(ctx, volumeGroupReplication(group, replicationv1alpha1.Primary))).To(Succeed())
			handle, _ := groupHandle(g, ctx, east, group.ns)
			brokenGroup = peerPoints(t, g, group, points, "group", func() (string, bool) {
				st := groupState(g, lab.West, handle)
				if st.LastSyncTime == nil || intentPending(g, lab.West, handle) {
					return "", false
				}
				for _, h := range group.handles {
					// Every member carries the group's point (when not, a mirror was applied meanwhile).
					if !sameTime(imageState(g, lab.West, h).LastSyncTime, st.LastSyncTime) {
						return "", false
					}
				}
				return st.LastSyncTime.String(), true
			})
		})
	})
	g := NewWithT(t)
	t.Logf("over %d points on west: per-volume mirrors broke the twin invariant %d times, the group's %d times", points, brokenPerVolume, brokenGroup)
	g.Expect(brokenPerVolume).To(BeNumerically(">", 0), "per-volume mirrors of two instants never broke the invariant: the test cannot tell a group from them")
	g.Expect(brokenGroup).To(BeZero(), "a group's point is of one instant")
}

// twinsTest is a subtest's Gomega and context for the twins' mirrors.
func twinsTest(t *testing.T) (*WithT, context.Context) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	return g, context.Background()
}
