// Command upstream-apis downloads the upstream projects' CRDs the tests compare with into the
// checkout's cache, .cache/upstream-apis, for `make upstream-apis` and `make test`; the work is
// in internal/lab/crds/upstream.
//
//	go run ./hack/upstream-apis                            # download what the cache lacks
//	go run ./hack/upstream-apis -if-missing -unavailable-ok # make test: only when none is found
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/drover-io/drover/internal/lab/crds/upstream"
	"github.com/drover-io/drover/internal/modroot"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("upstream-apis", flag.ContinueOnError)
	opts := upstream.EnsureOptions{FetchOptions: upstream.FetchOptions{Log: os.Stdout}}
	fs.StringVar(&opts.BaseURL, "base-url", upstream.DefaultBaseURL, "server of the repositories' files at a commit (/OWNER/NAME/COMMIT/PATH)")
	fs.BoolVar(&opts.IfMissing, "if-missing", false, "download nothing when $"+upstream.DirEnv+", the cache or ../shared/upstream-apis holds the files")
	fs.BoolVar(&opts.UnavailableOK, "unavailable-ok", false, "a download that gets no answer (no network) is a warning, not an error; a wrong sha256 still is one")
	if err := fs.Parse(args); err != nil {
		return err
	}
	root, err := modroot.Find()
	if err != nil {
		return fmt.Errorf("failed to find drover's checkout: %w", err)
	}
	opts.Root = root
	sources, err := upstream.Sources()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return upstream.Ensure(ctx, opts, sources)
}
