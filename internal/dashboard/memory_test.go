package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// fleetSize is how many applications the memory benchmark's fleet holds.
const fleetSize = 100

// BenchmarkTheFleetPageOf100Applications renders the fleet page of 100 protected applications
// (DRPlacementControls in the test's API server) and reports the dashboard's memory: the Go
// heap in use after a collection and the process's resident set (the API server is another
// process). Run it with
//
//	go test -count=1 -run '^$' -bench TheFleetPageOf100 -benchtime 20x ./internal/dashboard/
func BenchmarkTheFleetPageOf100Applications(b *testing.B) {
	ctx := context.Background()
	ns := "fleet"
	if err := k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	for i := range fleetSize {
		if err := createProtected(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("app-%03d", i)}, 3*time.Second); err != nil {
			b.Fatal(err)
		}
	}
	br := open(b, Options{Namespace: ns})
	code, page := br.get("/")
	if code != http.StatusOK || strings.Count(page, `<tr data-app="fleet/`) != fleetSize {
		b.Fatalf("the fleet page answered %d with %d applications, want %d", code, strings.Count(page, `<tr data-app="fleet/`), fleetSize)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if code, _ := br.get("/"); code != http.StatusOK {
			b.Fatalf("the fleet page answered %d", code)
		}
	}
	b.StopTimer()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	rss, hwm := procStatus("VmRSS"), procStatus("VmHWM")
	b.ReportMetric(float64(m.HeapInuse)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(rss)/1024, "rss-MiB")
	fmt.Printf("dashboard with %d applications: page %d KiB, heap in use %.1f MiB after GC, RSS %.1f MiB (peak %.1f MiB)\n",
		fleetSize, len(page)/1024, float64(m.HeapInuse)/(1<<20), float64(rss)/1024, float64(hwm)/1024)
}

// procStatus reads a kB field of /proc/self/status; 0 when unreadable.
func procStatus(field string) int {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			var kb int
			_, _ = fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb)
			return kb
		}
	}
	return 0
}
