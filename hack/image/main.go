// Command image builds and pushes drover's container image for `make image` and
// `make image-push`; the work is in internal/image.
//
//	go run ./hack/image build -bin-dir dist/bin -platforms linux/amd64,linux/arm64 \
//	  -version v0.1.0 -commit $(git rev-parse HEAD) -tag drover:v0.1.0
//	go run ./hack/image push -layout dist/image -ref registry.example.com/drover:v0.1.0
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/drover-io/drover/internal/image"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: image build|push [flags]; see hack/image/main.go")
	}
	switch args[0] {
	case "build":
		return build(args[1:])
	case "push":
		return push(args[1:])
	default:
		return fmt.Errorf("unknown command %q: use build or push", args[0])
	}
}

func build(args []string) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	binDir := fs.String("bin-dir", "dist/bin", "directory holding <os>_<arch>/drover for each platform")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "comma-separated platforms of the index")
	opts := image.Options{}
	fs.StringVar(&opts.Version, "version", "dev", "version label")
	fs.StringVar(&opts.Revision, "commit", "unknown", "git commit label")
	fs.StringVar(&opts.Source, "source", image.DefaultSource, "source repository label")
	created := fs.String("created", os.Getenv("SOURCE_DATE_EPOCH"), "creation time in Unix seconds (default $SOURCE_DATE_EPOCH, else 0)")
	layoutDir := fs.String("layout", "dist/image", "OCI layout directory to write (replaced)")
	tarballPath := fs.String("tarball", "dist/drover-image.tar", "docker-archive tarball to write, empty for none")
	tarballPlatform := fs.String("tarball-platform", "linux/"+runtime.GOARCH, "platform of the image in the tarball")
	tag := fs.String("tag", "drover:dev", "tag of the image in the tarball and the layout")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if opts.Created, err = parseEpoch(*created); err != nil {
		return err
	}
	for _, s := range strings.Split(*platforms, ",") {
		p, err := image.ParsePlatform(s)
		if err != nil {
			return err
		}
		path := filepath.Join(*binDir, p.OS+"_"+p.Architecture, "drover")
		opts.Binaries = append(opts.Binaries, image.Binary{Platform: p, Path: path})
	}
	start := time.Now()
	idx, err := image.Build(opts)
	if err != nil {
		return err
	}
	if err := image.WriteLayout(*layoutDir, idx, *tag); err != nil {
		return err
	}
	if *tarballPath != "" {
		p, err := image.ParsePlatform(*tarballPlatform)
		if err != nil {
			return err
		}
		if err := image.WriteTarball(*tarballPath, idx, p, *tag); err != nil {
			return err
		}
		fmt.Printf("wrote %s (%s, %s)\n", *tarballPath, p.String(), *tag)
	}
	digest, err := idx.Digest()
	if err != nil {
		return fmt.Errorf("failed to compute the index digest: %w", err)
	}
	fmt.Printf("wrote %s: index %s (%s) in %s\n", *layoutDir, digest, *tag, time.Since(start).Round(time.Millisecond))
	return printSizes(idx)
}

func printSizes(idx v1.ImageIndex) error {
	sizes, err := image.Sizes(idx)
	if err != nil {
		return err
	}
	for _, s := range sizes {
		fmt.Printf("  %-12s %s  %5.1f MiB compressed, %5.1f MiB uncompressed\n",
			s.Platform.String(), s.Digest, mib(s.Compressed), mib(s.Uncompressed))
	}
	return nil
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

func push(args []string) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	layoutDir := fs.String("layout", "dist/image", "OCI layout directory written by build")
	ref := fs.String("ref", "", "registry/repository:tag to push to")
	insecure := fs.Bool("insecure", false, "use plain HTTP (localhost and 127.0.0.1 always do)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *ref == "" {
		return errors.New("no reference to push to: set -ref, e.g. IMG=registry.example.com/drover:v0.1.0 make image-push")
	}
	idx, err := image.ReadLayout(*layoutDir)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	pushed, err := image.Push(ctx, idx, *ref, *insecure)
	if err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return fmt.Errorf("failed to compute the index digest: %w", err)
	}
	fmt.Printf("pushed %s@%s\n", pushed, digest)
	return nil
}

// parseEpoch parses Unix seconds; empty means the epoch itself.
func parseEpoch(s string) (time.Time, error) {
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("failed to parse creation time %q: give Unix seconds, e.g. $(git log -1 --format=%%ct): %w", s, err)
	}
	return time.Unix(n, 0).UTC(), nil
}
