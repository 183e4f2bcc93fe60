package objectstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/labtest"
	"github.com/drover-io/drover/internal/objectstore"
)

// deadStoreBudget is how long a call to a store that is down may take to fail.
const deadStoreBudget = 10 * time.Second

// labProfile returns the objectstore profile of a managed cluster's lab S3 server, with the
// Secret the lab puts it in.
func labProfile(g Gomega, cluster string) objectstore.Profile {
	profiles, err := testLab.S3Profiles()
	g.Expect(err).NotTo(HaveOccurred())
	for _, p := range profiles {
		if p.Name == "s3-"+cluster {
			return objectstore.Profile{
				Name: p.Name, Endpoint: p.Endpoint, Insecure: p.Insecure, Bucket: p.Bucket, Region: p.Region,
				AccessKeyID: p.AccessKeyID, SecretAccessKey: p.SecretAccessKey,
				SecretNamespace: lab.S3SecretNamespace, SecretName: p.Name,
			}
		}
	}
	g.Expect(cluster).To(BeEmpty(), "no S3 profile for cluster")
	return objectstore.Profile{}
}

// newStore returns a store for p that lists two keys per page, so a handful of objects takes
// List through its pagination.
func newStore(g Gomega, p objectstore.Profile) objectstore.Store {
	s, err := objectstore.NewS3(p)
	g.Expect(err).NotTo(HaveOccurred())
	objectstore.SetPageSize(s, 2)
	return s
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func TestS3StoreRoundTripsOnEveryLabProfile(t *testing.T) {
	for _, cluster := range []string{lab.East, lab.West} {
		t.Run(cluster, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			s := newStore(g, labProfile(g, cluster))
			g.Expect(s.Name()).To(Equal("s3-" + cluster))

			prefix := "roundtrip-" + strings.ToLower(rand.Text()[:8])
			objects := map[string][]byte{
				prefix + "/vrg.json":         []byte(`{"kind":"VolumeReplicationGroup"}`),
				prefix + "/pv/pv-1.json":     []byte(`{"kind":"PersistentVolume","name":"pv-1"}`),
				prefix + "/pv/pv-2.json":     []byte(`{"kind":"PersistentVolume","name":"pv-2"}`),
				prefix + "/objects/big.bin":  randomBytes(256 << 10),
				prefix + "/objects/empty":    {},
				prefix + "-neighbour/x.json": []byte("a key that shares the prefix's first characters"),
			}
			for k, v := range objects {
				g.Expect(s.Put(ctx, k, v)).To(Succeed(), "put %s", k)
			}
			for k, v := range objects {
				got, err := s.Get(ctx, k)
				g.Expect(err).NotTo(HaveOccurred(), "get %s", k)
				g.Expect(bytes.Equal(got, v)).To(BeTrue(), "%s returns the bytes it was given", k)
			}

			want := []string{
				prefix + "/objects/big.bin", prefix + "/objects/empty",
				prefix + "/pv/pv-1.json", prefix + "/pv/pv-2.json", prefix + "/vrg.json",
			}
			g.Expect(s.List(ctx, prefix+"/")).To(Equal(want), "five keys in pages of two")
			g.Expect(s.List(ctx, prefix+"/pv/")).To(Equal(want[2:4]))
			g.Expect(s.List(ctx, prefix+"/nothing/")).To(BeEmpty())

			g.Expect(s.Put(ctx, prefix+"/vrg.json", []byte("v2"))).To(Succeed(), "Put replaces")
			g.Expect(s.Get(ctx, prefix+"/vrg.json")).To(Equal([]byte("v2")))

			g.Expect(s.Delete(ctx, prefix+"/vrg.json")).To(Succeed())
			_, err := s.Get(ctx, prefix+"/vrg.json")
			g.Expect(errors.Is(err, objectstore.ErrNotFound)).To(BeTrue(), "deleted: %v", err)
			g.Expect(s.Delete(ctx, prefix+"/vrg.json")).To(Succeed(), "deleting again is no error")
			g.Expect(s.Delete(ctx, prefix+"/never/existed")).To(Succeed())

			g.Expect(s.DeletePrefix(ctx, prefix+"/")).To(Succeed())
			g.Expect(s.List(ctx, prefix+"/")).To(BeEmpty())
			g.Expect(s.DeletePrefix(ctx, prefix+"/")).To(Succeed(), "deleting a prefix again is no error")
			g.Expect(s.Get(ctx, prefix+"-neighbour/x.json")).To(Equal(objects[prefix+"-neighbour/x.json"]),
				"DeletePrefix leaves keys outside the prefix")
			g.Expect(s.DeletePrefix(ctx, prefix+"-neighbour/")).To(Succeed())
			g.Expect(s.DeletePrefix(ctx, "")).To(MatchError(ContainSubstring("refusing to delete every object")))
		})
	}
}

func TestS3StoreGetOfAMissingKeyIsErrNotFound(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := labProfile(g, lab.East)
	s := newStore(g, p)
	prefix := "missing-" + strings.ToLower(rand.Text()[:8])
	g.Expect(s.Put(ctx, prefix+"/dir/present", []byte("x"))).To(Succeed())
	defer func() { g.Expect(s.DeletePrefix(ctx, prefix+"/")).To(Succeed()) }()
	for _, key := range []string{prefix + "/absent", prefix + "/dir/absent", "never-" + prefix} {
		_, err := s.Get(ctx, key)
		g.Expect(errors.Is(err, objectstore.ErrNotFound)).To(BeTrue(), "get %s: %v", key, err)
		g.Expect(objectstore.ReasonOf(err)).To(Equal(objectstore.ReasonStoreObjectNotFound))
		g.Expect(err).To(MatchError(fmt.Sprintf("S3 profile s3-east at %s has no object %q in bucket drover", p.Endpoint, key)))
	}
}

func TestS3StoreClassifiesRefusedCredentials(t *testing.T) {
	g := NewWithT(t)
	east, west := labProfile(g, lab.East), labProfile(g, lab.West)
	wrongSecret := east
	wrongSecret.SecretAccessKey = "wrong" + east.SecretAccessKey
	unknownKey := east
	unknownKey.AccessKeyID = "LABNOSUCHKEY000000000"
	westWithEastKeys := west
	westWithEastKeys.AccessKeyID, westWithEastKeys.SecretAccessKey = east.AccessKeyID, east.SecretAccessKey
	tests := []struct {
		name     string
		profile  objectstore.Profile
		wantCode string
	}{
		{"the right access key with a wrong secret", wrongSecret, "SignatureDoesNotMatch"},
		{"an unknown access key", unknownKey, "InvalidAccessKeyId"},
		{"another profile's credentials", westWithEastKeys, "InvalidAccessKeyId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			want := fmt.Sprintf("S3 profile %s at %s rejected the credentials in Secret drover-system/%s (%s): check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
				tt.profile.Name, tt.profile.Endpoint, tt.profile.Name, tt.wantCode)
			for op, err := range callEveryMethod(newStore(g, tt.profile)) {
				g.Expect(err).To(MatchError(want), op)
				g.Expect(errors.Is(err, objectstore.ErrUnauthorized)).To(BeTrue(), op)
				g.Expect(errors.Is(err, objectstore.ErrNotFound)).To(BeFalse(), op)
				g.Expect(objectstore.ReasonOf(err)).To(Equal(objectstore.ReasonStoreUnauthorized), op)
			}
		})
	}
}

func TestS3StoreClassifiesAMissingBucket(t *testing.T) {
	g := NewWithT(t)
	p := labProfile(g, lab.West)
	p.Bucket = "drover-no-such-bucket"
	want := fmt.Sprintf(`S3 profile s3-west at %s has no bucket "drover-no-such-bucket": create the bucket, or set the profile's bucket to one that exists`, p.Endpoint)
	for op, err := range callEveryMethod(newStore(g, p)) {
		g.Expect(err).To(MatchError(want), op)
		g.Expect(errors.Is(err, objectstore.ErrNoSuchBucket)).To(BeTrue(), op)
		g.Expect(objectstore.ReasonOf(err)).To(Equal(objectstore.ReasonStoreNoSuchBucket), op)
	}
}

// callEveryMethod calls each method of s once and returns the errors by operation.
func callEveryMethod(s objectstore.Store) map[string]error {
	ctx := context.Background()
	errs := map[string]error{
		objectstore.OpPut:          s.Put(ctx, "probe/put", []byte("x")),
		objectstore.OpDelete:       s.Delete(ctx, "probe/delete"),
		objectstore.OpDeletePrefix: s.DeletePrefix(ctx, "probe/"),
	}
	_, errs[objectstore.OpGet] = s.Get(ctx, "probe/get")
	_, errs[objectstore.OpList] = s.List(ctx, "probe/")
	return errs
}

// TestS3StoreClassifiesVersitygwsUnknownUserAsUnauthorized runs versitygw as the lab did before
// it had an IAM store: an unknown access key is then a 404 with code XAdminUserNotFound, which
// must read as refused credentials, never as a missing object.
func TestS3StoreClassifiesVersitygwsUnknownUserAsUnauthorized(t *testing.T) {
	g := NewWithT(t)
	root, err := labtest.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	_, err = os.Stat(filepath.Join(root, "bin", "versitygw"))
	g.Expect(err).NotTo(HaveOccurred(), "bin/versitygw is missing: run `make tools`")
	port := freePort(g)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "versitygw"),
		fmt.Sprintf("--port=127.0.0.1:%d", port), "--quiet", "posix", dir)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID=LABROOTKEY", "ROOT_SECRET_ACCESS_KEY=lab-root-secret")
	// Whatever it writes beside its data stays in the test's directory, and it dies with the test.
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	g.Expect(cmd.Start()).To(Succeed())
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })

	p := objectstore.Profile{
		Name: "s3-plain", Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), Insecure: true, Bucket: "drover",
		AccessKeyID: "LABNOSUCHKEY000000000", SecretAccessKey: "whatever",
		SecretNamespace: "drover-system", SecretName: "s3-plain",
	}
	s := newStore(g, p)
	var getErr error
	g.Eventually(func() objectstore.Kind {
		_, getErr = s.Get(context.Background(), "vrg/a")
		return objectstore.KindOf(getErr)
	}).WithTimeout(10*time.Second).WithPolling(100*time.Millisecond).
		ShouldNot(Equal(objectstore.KindUnreachable), "versitygw starts")
	g.Expect(getErr).To(MatchError(ContainSubstring("rejected the credentials in Secret drover-system/s3-plain (XAdminUserNotFound)")))
	g.Expect(errors.Is(getErr, objectstore.ErrNotFound)).To(BeFalse())
}

func freePort(g Gomega) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

func TestS3StoreOfAStoppedClusterFailsFastAsUnreachableAndComesBack(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	eastProfile, westProfile := labProfile(g, lab.East), labProfile(g, lab.West)
	east, west := newStore(g, eastProfile), newStore(g, westProfile)
	prefix := "survivor-" + strings.ToLower(rand.Text()[:8]) + "/"
	body := []byte("written before east was lost")
	for _, s := range []objectstore.Store{east, west} {
		g.Expect(s.Put(ctx, prefix+"pv-1.json", body)).To(Succeed(), s.Name())
	}

	g.Expect(testLab.Stop(lab.East)).To(Succeed())
	stopped := true
	t.Cleanup(func() {
		if stopped {
			_ = testLab.Start(context.Background(), lab.East)
		}
	})

	want := fmt.Sprintf("S3 profile s3-east at %s is unreachable (dial %s: connection refused): "+
		"check that the store is running and that this cluster can reach its endpoint",
		eastProfile.Endpoint, strings.TrimPrefix(eastProfile.Endpoint, "http://"))
	for _, op := range []string{objectstore.OpPut, objectstore.OpGet, objectstore.OpList, objectstore.OpDelete, objectstore.OpDeletePrefix} {
		began := time.Now()
		err := callOne(ctx, east, op, prefix)
		took := time.Since(began)
		t.Logf("%s on the stopped east store failed in %v", op, took.Round(time.Millisecond))
		g.Expect(err).To(MatchError(want), op)
		g.Expect(errors.Is(err, objectstore.ErrUnreachable)).To(BeTrue(), op)
		g.Expect(objectstore.ReasonOf(err)).To(Equal(objectstore.ReasonStoreUnreachable), op)
		g.Expect(took).To(BeNumerically("<", deadStoreBudget), op)
	}

	g.Expect(west.Put(ctx, prefix+"pv-2.json", []byte("written while east was lost"))).To(Succeed(), "west is not affected")
	g.Expect(west.Get(ctx, prefix+"pv-1.json")).To(Equal(body))
	g.Expect(west.List(ctx, prefix)).To(Equal([]string{prefix + "pv-1.json", prefix + "pv-2.json"}))

	g.Expect(testLab.Start(ctx, lab.East)).To(Succeed())
	stopped = false
	g.Expect(labProfile(g, lab.East)).To(Equal(eastProfile), "east keeps its endpoint and credentials")
	g.Expect(east.Get(ctx, prefix+"pv-1.json")).To(Equal(body), "the same store works again, with its objects")
	g.Expect(east.List(ctx, prefix)).To(Equal([]string{prefix + "pv-1.json"}))
	for _, s := range []objectstore.Store{east, west} {
		g.Expect(s.DeletePrefix(ctx, prefix)).To(Succeed(), s.Name())
	}
}

// callOne calls the method op of s on a key or prefix under prefix.
func callOne(ctx context.Context, s objectstore.Store, op, prefix string) error {
	switch op {
	case objectstore.OpPut:
		return s.Put(ctx, prefix+"new.json", []byte("x"))
	case objectstore.OpGet:
		_, err := s.Get(ctx, prefix+"pv-1.json")
		return err
	case objectstore.OpList:
		_, err := s.List(ctx, prefix)
		return err
	case objectstore.OpDelete:
		return s.Delete(ctx, prefix+"pv-1.json")
	default:
		return s.DeletePrefix(ctx, prefix)
	}
}

func TestS3StoreOfAClosedPortFailsFast(t *testing.T) {
	g := NewWithT(t)
	p := testProfile()
	p.Endpoint = fmt.Sprintf("http://127.0.0.1:%d", freePort(g))
	s := newStore(g, p)
	began := time.Now()
	_, err := s.Get(context.Background(), "vrg/a")
	took := time.Since(began)
	t.Logf("get from a closed port failed in %v", took.Round(time.Millisecond))
	g.Expect(errors.Is(err, objectstore.ErrUnreachable)).To(BeTrue(), "%v", err)
	g.Expect(took).To(BeNumerically("<", 2*time.Second))
}

// TestS3StoreThatNeverAnswersFailsWithTheCallersDeadline: a store that accepts connections and
// then hangs is unreachable once the caller's deadline passes, not later.
func TestS3StoreThatNeverAnswersFailsWithTheCallersDeadline(t *testing.T) {
	g := NewWithT(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	var held sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	held.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		_ = l.Close()
		held.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})

	p := testProfile()
	p.Endpoint = "http://" + l.Addr().String()
	s := newStore(g, p)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	began := time.Now()
	err = s.Put(ctx, "vrg/a", []byte("x"))
	took := time.Since(began)
	t.Logf("put to a store that never answers failed in %v", took.Round(time.Millisecond))
	g.Expect(errors.Is(err, objectstore.ErrUnreachable)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError(ContainSubstring("is unreachable (no answer within the timeout)")))
	g.Expect(took).To(BeNumerically("<", 3*time.Second))
}

func TestProfileFromTheLabsSecretReachesTheStore(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	hub, err := testLab.Cluster(lab.Hub)
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := hub.RESTConfig()
	g.Expect(err).NotTo(HaveOccurred())
	cfg.Timeout = 5 * time.Second
	cl, err := client.New(cfg, client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	secret := &corev1.Secret{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: "drover-system", Name: "s3-east"}, secret)).To(Succeed())

	fromSecret, err := objectstore.ProfileFromSecret("s3-east", secret)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fromSecret.Keys.IDs()).To(HaveLen(1), "the lab's Secret holds the profile's store key")
	withoutKeys := fromSecret
	withoutKeys.Keys = objectstore.Keyring{}
	g.Expect(withoutKeys).To(Equal(labProfile(g, lab.East)))

	spec := v1alpha1.S3Profile{
		Name: "s3-east", Endpoint: fromSecret.Endpoint, Insecure: fromSecret.Insecure, Bucket: fromSecret.Bucket, Region: fromSecret.Region,
		SecretRef: v1alpha1.SecretRef{Namespace: "drover-system", Name: "s3-east"},
	}
	fromSpec, err := objectstore.ProfileFromSpec(spec, secret)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fromSpec).To(Equal(fromSecret))

	key := "from-secret-" + strings.ToLower(rand.Text()[:8])
	s := newStore(g, fromSecret)
	g.Expect(s.Put(ctx, key, []byte("via the hub's Secret"))).To(Succeed())
	g.Expect(newStore(g, fromSpec).Get(ctx, key)).To(Equal([]byte("via the hub's Secret")))
	g.Expect(s.Delete(ctx, key)).To(Succeed())
}

func TestS3StoreKeepsEveryByteUnderConcurrentPuts(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := newStore(g, labProfile(g, lab.West))
	prefix := "concurrent-" + strings.ToLower(rand.Text()[:8]) + "/"
	const workers, perWorker = 16, 8
	bodies := map[string][]byte{}
	for w := range workers {
		for i := range perWorker {
			bodies[fmt.Sprintf("%sw%02d/%02d", prefix, w, i)] = randomBytes(32<<10 + w*perWorker + i)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(bodies))
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				key := fmt.Sprintf("%sw%02d/%02d", prefix, w, i)
				// Every key written twice, the second time with its final body, from one worker.
				if err := s.Put(ctx, key, randomBytes(1024)); err != nil {
					errs <- err
				}
				if err := s.Put(ctx, key, bodies[key]); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
	keys, err := s.List(ctx, prefix)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(keys).To(HaveLen(len(bodies)))
	g.Expect(slices.IsSorted(keys)).To(BeTrue())
	for _, k := range keys {
		got, err := s.Get(ctx, k)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(bytes.Equal(got, bodies[k])).To(BeTrue(), "%s holds exactly its last body", k)
	}
	g.Expect(s.DeletePrefix(ctx, prefix)).To(Succeed())
	g.Expect(s.List(ctx, prefix)).To(BeEmpty())
}
