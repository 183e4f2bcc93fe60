// Command charts writes the generated templates and CRDs of drover's Helm charts (charts/) from
// the kustomize trees of config/ for `make charts`; the work is in internal/chart.
//
//	go run ./hack/charts [-kustomize bin/kustomize] [-check]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/drover-io/drover/internal/chart"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("charts", flag.ContinueOnError)
	opts := chart.Options{}
	fs.StringVar(&opts.Root, "root", ".", "the repository, holding config/ and charts/")
	fs.StringVar(&opts.Kustomize, "kustomize", filepath.Join("bin", "kustomize"), "the kustomize binary (hack/build-tools.sh kustomize)")
	check := fs.Bool("check", false, "write nothing; fail when the committed charts differ from what would be written")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	files, err := chart.Generate(ctx, opts)
	if err != nil {
		return err
	}
	if *check {
		stale, err := chart.Stale(opts.Root, files)
		if err != nil {
			return err
		}
		if len(stale) > 0 {
			return fmt.Errorf("the charts differ from config/ in %s: run make charts", strings.Join(stale, ", "))
		}
		return nil
	}
	if err := chart.Write(opts.Root, files); err != nil {
		return err
	}
	fmt.Printf("wrote %d generated files of the charts %s\n", len(files), strings.Join(names(), ", "))
	return nil
}

func names() []string {
	var out []string
	for _, s := range chart.Specs() {
		out = append(out, "charts/"+s.Name)
	}
	return out
}
