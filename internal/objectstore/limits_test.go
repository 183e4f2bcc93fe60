package objectstore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/objectstore"
)

// heapAllocated is the bytes the process allocated so far.
func heapAllocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// The lab's real S3 server serves a 1 GiB object (a sparse file in its data directory, so the
// test writes no gigabyte): the store refuses it from its Content-Length, and allocates next to
// nothing doing so.
func TestS3StoreRefusesAGigabyteObjectBeforeReadingIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := newStore(g, labProfile(g, lab.East))
	key := "limits-" + rand.Text()[:8] + "/kubeobjects/capture.json"
	g.Expect(s.Put(ctx, key, []byte("{}"))).To(Succeed(), "the server knows the object")
	t.Cleanup(func() { _ = s.Delete(context.Background(), key) })
	c, err := testLab.Cluster(lab.East)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.Truncate(c.S3ObjectPath(key), 1<<30)).To(Succeed(), "the object becomes 1 GiB on the server")

	before := heapAllocated()
	body, err := s.Get(ctx, key)
	allocated := heapAllocated() - before
	g.Expect(body).To(BeNil())
	g.Expect(errors.Is(err, objectstore.ErrRefused)).To(BeTrue(), "refused: %v", err)
	g.Expect(objectstore.ReasonOf(err)).To(Equal(objectstore.ReasonStoreObjectRefused))
	g.Expect(err).To(MatchError(ContainSubstring(fmt.Sprintf(
		`S3 profile s3-east at %s: object %q of bucket drover is refused, and nothing is created from it: the object is 1073741824 bytes, more than the limit of 67108864: refused before reading it`,
		c.S3Endpoint(), key))))
	g.Expect(allocated).To(BeNumerically("<", 8<<20), "the Get allocated %d bytes", allocated)
	t.Logf("a 1 GiB object is refused after %d bytes allocated: %v", allocated, err)
}

// A server that announces no length and streams without end: the store reads at most its limit
// (lowered here to 1 MiB) and refuses the object; the server sends little more than that before
// the store hangs up.
func TestS3StoreReadsAtMostItsLimitOfAnObjectStreamedWithoutLength(t *testing.T) {
	g := NewWithT(t)
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.WriteHeader(http.StatusNotImplemented)
			return
		}
		w.Header().Set("ETag", `"endless"`)
		w.WriteHeader(http.StatusOK)
		chunk := []byte(strings.Repeat("x", 64<<10))
		for served.Load() < 1<<30 {
			n, err := w.Write(chunk)
			served.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	const limit = 1 << 20
	p := objectstore.Profile{
		Name: "s3-endless", Endpoint: srv.URL, Insecure: true, Bucket: "drover",
		AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "not-a-real-secret",
		Limits: objectstore.Limits{MaxObjectBytes: func(string) int64 { return limit }},
	}
	s, err := objectstore.NewS3(p)
	g.Expect(err).NotTo(HaveOccurred())
	before := heapAllocated()
	_, err = s.Get(context.Background(), "vrg/kubeobjects/capture.json")
	allocated := heapAllocated() - before
	g.Expect(errors.Is(err, objectstore.ErrRefused)).To(BeTrue(), "refused: %v", err)
	g.Expect(err).To(MatchError(ContainSubstring("the object is more than the limit of 1048576 bytes (its server announced no length): refused")))
	srv.CloseClientConnections()
	g.Expect(allocated).To(BeNumerically("<", 16<<20), "the Get allocated %d bytes", allocated)
	g.Expect(served.Load()).To(BeNumerically("<", 64<<20), "the server could send %d bytes before the store hung up", served.Load())
	t.Logf("an endless object is refused after %d bytes allocated, %d bytes sent by the server", allocated, served.Load())
}

// A listing of more keys than the limit is refused, not returned in part.
func TestS3StoreRefusesAListingOfMoreKeysThanItsLimit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := labProfile(g, lab.West)
	p.Limits = objectstore.Limits{MaxKeys: 3}
	s := newStore(g, p)
	prefix := "limits-" + rand.Text()[:8] + "/pvs/"
	for i := range 5 {
		g.Expect(s.Put(ctx, fmt.Sprintf("%s%d.json", prefix, i), []byte("{}"))).To(Succeed())
	}
	t.Cleanup(func() { _ = newStore(g, labProfile(g, lab.West)).DeletePrefix(context.Background(), prefix) })
	keys, err := s.List(ctx, prefix)
	g.Expect(keys).To(BeNil())
	g.Expect(errors.Is(err, objectstore.ErrRefused)).To(BeTrue(), "refused: %v", err)
	g.Expect(err).To(MatchError(ContainSubstring(fmt.Sprintf("object %q of bucket drover is refused, and nothing is created from it: listing it finds more than 3 keys, the limit", prefix))))
}
