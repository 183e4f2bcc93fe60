package status

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
)

// Watch prints the applications as Status does (the table without the details of one
// APP), then, as kubectl get -w does, a row (or an object, or a name) each time one of them
// changes, is created or is deleted, until ctx ends. It returns nil when ctx ends.
func Watch(ctx context.Context, c client.WithWatch, w io.Writer, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	apps, rv, err := loadStatusApps(ctx, c, &o)
	if err != nil {
		return err
	}
	p := &watchPrinter{w: w, o: o, cols: tableColumns{namespace: o.AllNamespaces, wide: o.Output == cli.OutputWide, header: true},
		policies: map[string]*v1alpha1.DRPolicy{}, printed: map[string]string{}}
	p.widths = widthsOf(headerCells(p.cols))
	for _, a := range apps {
		p.grow(a)
	}
	if !cli.Structured(o.Output) && o.Output != cli.OutputName {
		fmt.Fprintln(w, padded(headerCells(p.cols), p.widths))
	}
	for _, a := range apps {
		if err := p.print(a); err != nil {
			return err
		}
	}
	for {
		rv, err = p.follow(ctx, c, rv)
		if errors.Is(err, errWatchExpired) {
			rv, err = p.relist(ctx, c)
		}
		if err != nil || ctx.Err() != nil {
			return err
		}
	}
}

// errWatchExpired is a watch that the API server ended because its resource version is too old
// (410 Gone, after etcd's compaction): the watcher lists again, as client-go's reflector does.
var errWatchExpired = errors.New("the watch's resource version expired")

// relist lists the applications again after an expired watch and prints those that changed
// while it was not watched; it returns the list's resource version to watch from.
func (p *watchPrinter) relist(ctx context.Context, c client.WithWatch) (string, error) {
	o := p.o
	apps, rv, err := loadStatusApps(ctx, c, &o)
	if err != nil {
		return "", err
	}
	for _, a := range apps {
		if p.printed[keyOf(a.DRPC)] == a.DRPC.ResourceVersion {
			continue
		}
		if err := p.print(a); err != nil {
			return rv, err
		}
	}
	return rv, nil
}

// keyOf is namespace/name of an object.
func keyOf(o client.Object) string { return o.GetNamespace() + "/" + o.GetName() }

// watchPrinter prints what a watch delivers in the status's format.
type watchPrinter struct {
	w        io.Writer
	o        Options
	cols     tableColumns
	widths   []int
	policies map[string]*v1alpha1.DRPolicy
	// printed is the resource version last printed of each application, by namespace/name.
	printed map[string]string
}

// follow watches the DRPlacementControls from resource version rv and prints each change,
// until the watch ends; it returns the last resource version seen.
func (p *watchPrinter) follow(ctx context.Context, c client.WithWatch, rv string) (string, error) {
	opts := &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}}
	if !p.o.AllNamespaces {
		opts.Namespace = p.o.Namespace
	}
	if p.o.App != "" {
		opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", p.o.App)
	}
	wi, err := c.Watch(ctx, &v1alpha1.DRPlacementControlList{}, opts)
	if err != nil {
		if ctx.Err() != nil {
			return rv, nil
		}
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return rv, errWatchExpired
		}
		return rv, cli.ReadError("DRPlacementControls", err)
	}
	defer wi.Stop()
	for ev := range wi.ResultChan() {
		if ctx.Err() != nil {
			return rv, nil
		}
		if ev.Type == watch.Error {
			err := apierrors.FromObject(ev.Object)
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				return rv, errWatchExpired
			}
			return rv, fmt.Errorf("the watch of the DRPlacementControls ended: %w; run the command again", err)
		}
		d, ok := ev.Object.(*v1alpha1.DRPlacementControl)
		if !ok || ev.Type == watch.Bookmark {
			continue
		}
		rv = d.ResourceVersion
		a := &cli.App{DRPC: d}
		if err := a.LoadPolicy(ctx, c, p.policies); err != nil {
			return rv, err
		}
		if err := p.print(a); err != nil {
			return rv, err
		}
	}
	return rv, nil
}

// grow widens the columns to fit the application's row.
func (p *watchPrinter) grow(a *cli.App) {
	for i, cell := range rowOf(a.DRPC, a.Interval, cli.Now(p.o.Now)).cells(p.cols) {
		p.widths[i] = max(p.widths[i], len(cell))
	}
}

// print prints one application: its row, its object or its name.
func (p *watchPrinter) print(a *cli.App) error {
	p.printed[keyOf(a.DRPC)] = a.DRPC.ResourceVersion
	switch {
	case cli.Structured(p.o.Output):
		return cli.WriteStructured(p.w, p.o.Output, cli.AsObject(a.DRPC))
	case p.o.Output == cli.OutputName:
		return cli.WriteNames(p.w, "DRPlacementControl", []string{a.DRPC.Name})
	}
	_, err := fmt.Fprintln(p.w, padded(rowOf(a.DRPC, a.Interval, cli.Now(p.o.Now)).cells(p.cols), p.widths))
	return err
}

// widthsOf are the lengths of the cells.
func widthsOf(cells []string) []int {
	out := make([]int, len(cells))
	for i, c := range cells {
		out[i] = len(c)
	}
	return out
}

// padded joins the cells, each padded to its column's width and two spaces, as the tables are.
func padded(cells []string, widths []int) string {
	var b strings.Builder
	for i, c := range cells {
		if i == len(cells)-1 {
			b.WriteString(c)
			break
		}
		fmt.Fprintf(&b, "%-*s  ", widths[i], c)
	}
	return b.String()
}
