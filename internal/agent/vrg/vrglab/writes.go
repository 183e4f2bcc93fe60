package vrglab

import (
	"context"
	"maps"
	"net/http"
	"strings"
	"sync"

	"github.com/drover-io/drover/internal/agent/vrg"
	"github.com/drover-io/drover/internal/objectstore"
)

// writes counts every API and S3 write of the agents the test package runs, by cluster and
// namespace, so a test can prove what a settled group writes; and their API reads, so it can
// prove what a settled group reads.
var writes = &writeCounter{counts: map[WriteKey]int{}}

// WriteKey names one kind of write (or read) of one namespace on one cluster: What is the API
// resource ("volumereplicationgroups/status") or "s3".
type WriteKey struct {
	Cluster, Namespace, What string
	Read                     bool
}

type writeCounter struct {
	mu     sync.Mutex
	counts map[WriteKey]int
}

func (w *writeCounter) add(k WriteKey) {
	w.mu.Lock()
	w.counts[k]++
	w.mu.Unlock()
}

// Writes returns the counts so far of the agents' API requests and S3 writes; two of them,
// before and after, tell what the agents did in between.
func Writes() map[WriteKey]int {
	writes.mu.Lock()
	defer writes.mu.Unlock()
	return maps.Clone(writes.counts)
}

// countAPI wraps an agent's transport: every request is counted by the namespace and resource
// of its path, reads (GET, watches included) apart; cluster-scoped requests count under
// namespace "".
func (w *writeCounter) countAPI(cluster string) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			ns, what := apiTarget(req.URL.Path)
			read := req.Method == http.MethodGet || req.Method == http.MethodHead
			w.add(WriteKey{Cluster: cluster, Namespace: ns, What: what, Read: read})
			return rt.RoundTrip(req)
		})
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// apiTarget returns the namespace and the resource (with its subresource) of an API path:
// /apis/<group>/<version>/namespaces/<ns>/<resource>/<name>/<subresource>. A namespace itself
// (/api/v1/namespaces/<ns>) counts under its own name as "namespaces".
func apiTarget(path string) (namespace, what string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) == 4 && parts[0] == "api" && parts[2] == "namespaces" {
		return parts[3], "namespaces"
	}
	for i, p := range parts {
		if p == "namespaces" && i+2 < len(parts) {
			namespace, parts = parts[i+1], parts[i+2:]
			break
		}
	}
	if namespace == "" {
		// Cluster-scoped: /api/v1/<resource>/... or /apis/<group>/<version>/<resource>/...
		skip := 2
		if len(parts) > 0 && parts[0] == "apis" {
			skip = 3
		}
		if len(parts) <= skip {
			return "", path
		}
		parts = parts[skip:]
	}
	what = parts[0]
	if len(parts) > 2 {
		what += "/" + parts[2]
	}
	return namespace, what
}

// countS3 is the agent's StoreFactory with every write counted by the namespace of its key
// (<group namespace>/<group name>/...).
func (w *writeCounter) countS3(cluster string) vrg.StoreFactory {
	return func(p objectstore.Profile) (objectstore.Store, error) {
		s, err := vrg.NewS3Store(p)
		if err != nil {
			return nil, err
		}
		return &countedStore{Store: s, count: func(key string) {
			ns, _, _ := strings.Cut(key, "/")
			w.add(WriteKey{Cluster: cluster, Namespace: ns, What: "s3"})
		}}, nil
	}
}

type countedStore struct {
	objectstore.Store
	count func(key string)
}

func (s *countedStore) Put(ctx context.Context, key string, body []byte) error {
	s.count(key)
	return s.Store.Put(ctx, key, body)
}

func (s *countedStore) PutIf(ctx context.Context, key string, body []byte, version string) error {
	s.count(key)
	return s.Store.PutIf(ctx, key, body, version)
}

func (s *countedStore) Delete(ctx context.Context, key string) error {
	s.count(key)
	return s.Store.Delete(ctx, key)
}

func (s *countedStore) DeletePrefix(ctx context.Context, prefix string) error {
	s.count(prefix)
	return s.Store.DeletePrefix(ctx, prefix)
}

func (s *countedStore) GetCurrent(ctx context.Context, key string) ([]byte, bool, error) {
	return objectstore.GetCurrent(ctx, s.Store, key)
}

func (s *countedStore) GetVersionCurrent(ctx context.Context, key string) ([]byte, string, bool, error) {
	return objectstore.GetVersionCurrent(ctx, s.Store, key)
}
