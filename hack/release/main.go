// Command release builds drover's release for `make release`; the work is in internal/release.
//
//	go run ./hack/release -version v0.1.0 -commit $(git rev-parse HEAD) -out dist/release \
//	  -manifests dist/drover-hub.yaml,dist/drover-agent.yaml -charts charts/drover-hub,charts/drover-agent -image drover:v0.1.0
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/drover-io/drover/internal/release"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	opts := release.Options{Root: ".", Log: os.Stdout}
	fs.StringVar(&opts.Version, "version", "dev", "version stamped into the binaries and named by the archives")
	fs.StringVar(&opts.Commit, "commit", "unknown", "git commit stamped into the binaries")
	fs.StringVar(&opts.Out, "out", "dist/release", "directory to write the release to (replaced)")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64,windows/amd64,windows/arm64",
		"comma-separated platforms to build")
	manifests := fs.String("manifests", "", "comma-separated files copied into the release (the release manifests)")
	charts := fs.String("charts", "", "comma-separated directories of Helm charts packaged into the release, with index.yaml")
	fs.StringVar(&opts.Image, "image", "", "the image the release manifests name (IMG): the charts' default image")
	fs.StringVar(&opts.URLBase, "url-base", "", "where the archives will be downloadable from (the krew manifest's uri prefix)")
	created := fs.String("created", os.Getenv("SOURCE_DATE_EPOCH"), "time of every archive entry in Unix seconds (default $SOURCE_DATE_EPOCH, else 0)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if opts.Platforms, err = release.ParsePlatforms(*platforms); err != nil {
		return err
	}
	secs := int64(0)
	if *created != "" {
		if secs, err = strconv.ParseInt(*created, 10, 64); err != nil {
			return fmt.Errorf("-created %q is not Unix seconds: %w", *created, err)
		}
	}
	opts.Created = time.Unix(secs, 0).UTC()
	if *manifests != "" {
		opts.Manifests = strings.Split(*manifests, ",")
	}
	if *charts != "" {
		opts.Charts = strings.Split(*charts, ",")
		if opts.Image == "" {
			return errors.New("-charts needs -image, the image the release manifests name")
		}
	}
	if opts.URLBase == "" {
		opts.URLBase = "https://github.com/drover-io/drover/releases/download/" + opts.Version + "/"
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	names, err := release.Build(ctx, opts)
	if err != nil {
		return err
	}
	fmt.Printf("wrote %d files to %s: %s\n", len(names), opts.Out, strings.Join(names, " "))
	return nil
}
