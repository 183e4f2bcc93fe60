package csiaddons_test

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/storage"
)

// BenchmarkMirror100MB measures the lab's mirroring of a 100 MB volume: the copy the storage
// records (the lastSyncBytes / lastSyncDuration a VolumeReplication reports at csi-addons'
// next refresh), and the wall time from creating the VolumeReplication to its first completed
// mirror.
//
//	go test ./internal/lab/storage -run '^$' -bench Mirror100MB -benchtime 3x
func BenchmarkMirror100MB(b *testing.B) {
	g := NewWithT(b)
	ctx := context.Background()
	east, west := volRepClient(g, lab.East), volRepClient(g, lab.West)
	ns := "bench-" + utilrand.String(5)
	class := replicationClass("lab-block-"+ns, time.Hour)
	for _, cl := range []client.Client{east, west} {
		createNamespace(g, ctx, cl, ns)
		g.Expect(cl.Create(ctx, class.DeepCopy())).To(Succeed())
	}
	payload := make([]byte, 10<<20)
	var copied, wall time.Duration
	var bytes int64
	i := 0
	for b.Loop() {
		name := "data-" + utilrand.String(4)
		b.StopTimer()
		g.Expect(east.Create(ctx, blockPVC(ns, name))).To(Succeed())
		handle := boundHandle(g, ctx, east, ns, name)
		for f := range 10 {
			_, _ = rand.Read(payload)
			g.Expect(os.WriteFile(filepath.Join(volumeDir(lab.East, handle), "blob-"+string(rune('a'+f))), payload, 0o600)).To(Succeed())
		}
		b.StartTimer()
		began := time.Now()
		g.Expect(east.Create(ctx, volumeReplication(ns, name, class.Name, replicationv1alpha1.Primary))).To(Succeed())
		var st storage.ImageState
		g.Eventually(func(g Gomega) {
			st = imageState(g, lab.East, handle)
			g.Expect(st.LastSyncTime).NotTo(BeNil())
		}).WithTimeout(2 * time.Minute).WithPolling(20 * time.Millisecond).Should(Succeed())
		wall += time.Since(began)
		copied += st.LastSyncDuration
		bytes += st.LastSyncBytes
		i++
	}
	b.ReportMetric(float64(bytes)/(1<<20)/copied.Seconds(), "MB/s-copy")
	b.ReportMetric(wall.Seconds()/float64(i), "s/first-mirror")
}

// BenchmarkWriteToPeerDelay measures, at the shortest interval the lab allows (1 s), the time
// from a write on the primary to its presence on the peer.
//
//	go test ./internal/lab/storage -run '^$' -bench WriteToPeerDelay -benchtime 10x
func BenchmarkWriteToPeerDelay(b *testing.B) {
	g := NewWithT(b)
	ctx := context.Background()
	east, west := volRepClient(g, lab.East), volRepClient(g, lab.West)
	ns, class, handle := newVolume(g, ctx, east, west, "delay", time.Second)
	mirrored(g, ctx, east, ns, class, handle)
	var worst time.Duration
	i := 0
	for b.Loop() {
		name := "write-" + utilrand.String(6)
		began := time.Now()
		writeFile(g, volumeDir(lab.East, handle), name, name)
		g.Eventually(func() bool {
			_, err := os.Stat(filepath.Join(volumeDir(lab.West, handle), name))
			return err == nil
		}).WithTimeout(30 * time.Second).WithPolling(5 * time.Millisecond).Should(BeTrue())
		worst = max(worst, time.Since(began))
		i++
	}
	b.ReportMetric(worst.Seconds(), "s-worst")
}
