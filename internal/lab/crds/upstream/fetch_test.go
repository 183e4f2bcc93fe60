package upstream_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/drover-io/drover/internal/lab/crds/upstream"
)

const commit = "0123456789abcdef0123456789abcdef01234567"

// source is a manifest entry of name in github.com/example/apis at commit, whose pinned content
// is content.
func source(name, content string) upstream.Source {
	sum := sha256.Sum256([]byte(content))
	return upstream.Source{File: name, Project: "example", Repository: "github.com/example/apis", Commit: commit,
		Path: "crds/" + name, SHA256: hex.EncodeToString(sum[:])}
}

// server serves files (name to content) as raw.githubusercontent.com serves
// github.com/example/apis at commit, and counts the requests.
func server(t *testing.T, files map[string]string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		content, ok := files[strings.TrimPrefix(r.URL.Path, "/example/apis/"+commit+"/crds/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(content))
	}))
	t.Cleanup(srv.Close)
	return srv, &requests
}

// entries lists the names in dir, hidden ones included.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

func TestFetchRefusesATamperedFileAndKeepsItOutOfTheCache(t *testing.T) {
	sources := []upstream.Source{source("good.yaml", "kind: Good\n"), source("tampered.yaml", "kind: Pinned\n")}
	srv, _ := server(t, map[string]string{"good.yaml": "kind: Good\n", "tampered.yaml": "kind: Changed\n"})
	cache := filepath.Join(t.TempDir(), ".cache", "upstream-apis")

	err := upstream.Fetch(context.Background(), upstream.FetchOptions{BaseURL: srv.URL}, cache, sources)
	mismatch, ok := errors.AsType[*upstream.MismatchError](err)
	if !ok {
		t.Fatalf("Fetch of a tampered file = %v, want a *MismatchError", err)
	}
	if mismatch.File != "tampered.yaml" || !strings.Contains(err.Error(), "tampered.yaml") {
		t.Fatalf("the error names %q (%v), want tampered.yaml", mismatch.File, err)
	}
	if got := entries(t, cache); !slices.Equal(got, []string{"good.yaml"}) {
		t.Fatalf("the cache holds %q, want only good.yaml: nothing of the tampered file may land there", got)
	}
	if raw, err := os.ReadFile(filepath.Join(cache, "good.yaml")); err != nil || string(raw) != "kind: Good\n" {
		t.Fatalf("good.yaml = %q, %v; want the served file", raw, err)
	}
}

func TestFetchReplacesACachedFileWithAnotherSumAndLeavesARightOneAlone(t *testing.T) {
	sources := []upstream.Source{source("a.yaml", "kind: A\n"), source("b.yaml", "kind: B\n")}
	srv, requests := server(t, map[string]string{"a.yaml": "kind: A\n", "b.yaml": "kind: B\n"})
	cache := t.TempDir()
	if err := os.WriteFile(filepath.Join(cache, "a.yaml"), []byte("kind: A\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, "b.yaml"), []byte("edited by hand\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := upstream.Fetch(context.Background(), upstream.FetchOptions{BaseURL: srv.URL}, cache, sources); err != nil {
		t.Fatal(err)
	}
	if raw, _ := os.ReadFile(filepath.Join(cache, "b.yaml")); string(raw) != "kind: B\n" {
		t.Fatalf("b.yaml = %q, want the pinned file downloaded again", raw)
	}
	if n := requests.Load(); n != 1 {
		t.Fatalf("%d requests, want 1: a.yaml has its sum and is not downloaded again", n)
	}
}

func TestFetchStopsAtTheFirstFileTheServerDoesNotAnswerFor(t *testing.T) {
	srv, _ := server(t, nil)
	srv.Close()
	sources := []upstream.Source{source("a.yaml", "a"), source("b.yaml", "b")}
	cache := t.TempDir()
	err := upstream.Fetch(context.Background(), upstream.FetchOptions{BaseURL: srv.URL}, cache, sources)
	if err == nil || !strings.Contains(err.Error(), "a.yaml") || strings.Contains(err.Error(), "b.yaml") {
		t.Fatalf("Fetch from a closed server = %v, want one error naming a.yaml", err)
	}
	if got := entries(t, cache); len(got) != 0 {
		t.Fatalf("the cache holds %q, want nothing", got)
	}
}

// checkout returns a checkout directory with no shared copy beside it and $DROVER_UPSTREAM_APIS
// unset.
func checkout(t *testing.T) string {
	t.Helper()
	t.Setenv(upstream.DirEnv, "")
	t.Setenv(upstream.RequireEnv, "")
	root := filepath.Join(t.TempDir(), "drover")
	if err := os.Mkdir(root, 0o750); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestEnsureWithoutNetworkWarnsAndLeavesTheTestsToSkip(t *testing.T) {
	srv, _ := server(t, nil)
	srv.Close()
	root := checkout(t)
	sources := []upstream.Source{source("a.yaml", "a")}
	var log strings.Builder
	opts := upstream.EnsureOptions{FetchOptions: upstream.FetchOptions{BaseURL: srv.URL, Log: &log}, Root: root, IfMissing: true}

	if err := upstream.Ensure(context.Background(), opts, sources); err == nil {
		t.Fatal("Ensure without -unavailable-ok succeeded with no server")
	}
	opts.UnavailableOK = true
	if err := upstream.Ensure(context.Background(), opts, sources); err != nil {
		t.Fatalf("Ensure with UnavailableOK and no server = %v, want a warning only", err)
	}
	if !strings.Contains(log.String(), "warning: ") || !strings.Contains(log.String(), upstream.FetchCommand) {
		t.Fatalf("the log %q says neither that the download failed nor what to run", log.String())
	}
	if _, err := upstream.Find(upstream.Locations(root), sources); !upstream.MaySkip(err) {
		t.Fatalf("after the failed download Find = %v, want an error the tests skip on", err)
	}
}

func TestEnsureFailsOnATamperedFileEvenWhenTheNetworkMayBeMissing(t *testing.T) {
	srv, _ := server(t, map[string]string{"a.yaml": "kind: Changed\n"})
	opts := upstream.EnsureOptions{FetchOptions: upstream.FetchOptions{BaseURL: srv.URL, Log: &strings.Builder{}},
		Root: checkout(t), IfMissing: true, UnavailableOK: true}
	err := upstream.Ensure(context.Background(), opts, []upstream.Source{source("a.yaml", "kind: Pinned\n")})
	if _, ok := errors.AsType[*upstream.MismatchError](err); !ok {
		t.Fatalf("Ensure of a tampered file = %v, want a *MismatchError", err)
	}
}

func TestEnsureDownloadsNothingWhenTheSharedCopyHoldsTheFiles(t *testing.T) {
	srv, requests := server(t, map[string]string{"a.yaml": "a"})
	root := checkout(t)
	shared := upstream.SharedDir(root)
	if err := os.MkdirAll(shared, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shared, "a.yaml"), []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := upstream.EnsureOptions{FetchOptions: upstream.FetchOptions{BaseURL: srv.URL, Log: &strings.Builder{}}, Root: root, IfMissing: true}
	if err := upstream.Ensure(context.Background(), opts, []upstream.Source{source("a.yaml", "a")}); err != nil {
		t.Fatal(err)
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("%d requests, want none: ../shared/upstream-apis holds the files", n)
	}
	opts.IfMissing = false
	if err := upstream.Ensure(context.Background(), opts, []upstream.Source{source("a.yaml", "a")}); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, upstream.CacheDir(root)); !slices.Equal(got, []string{"a.yaml"}) {
		t.Fatalf("without IfMissing the cache holds %q, want a.yaml downloaded", got)
	}
}

// CI requires the upstream CRDs: there a failed download stops make test at its first line,
// with what to do, instead of after the whole suite.
func TestEnsureFailsWithoutNetworkWhenTheFilesAreRequired(t *testing.T) {
	srv, _ := server(t, nil)
	srv.Close()
	root := checkout(t)
	t.Setenv(upstream.RequireEnv, "1")
	opts := upstream.EnsureOptions{FetchOptions: upstream.FetchOptions{BaseURL: srv.URL, Log: &strings.Builder{}},
		Root: root, IfMissing: true, UnavailableOK: true}
	err := upstream.Ensure(context.Background(), opts, []upstream.Source{source("a.yaml", "a")})
	if err == nil {
		t.Fatal("Ensure with UnavailableOK, no server and the files required succeeded")
	}
	if !strings.Contains(err.Error(), upstream.RequireEnv) || !strings.Contains(err.Error(), upstream.DirEnv) {
		t.Fatalf("Ensure's error %q says neither why the files are required nor what to set", err)
	}
	t.Log(err)
}
