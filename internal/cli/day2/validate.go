package day2

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/drover-io/drover/internal/cli"
)

// Result is the outcome of one check of `drover validate`.
type Result string

// The results of a check, worst last.
const (
	// Pass: the check holds.
	Pass Result = "pass"
	// Warn: the check could not be made, or holds with a caveat the detail states.
	Warn Result = "warn"
	// Fail: the check does not hold; the detail says what to do.
	Fail Result = "fail"
)

// Row is one check of `drover validate`: what is checked, its result and what was observed,
// including what the observation is based on.
type Row struct {
	Check  string `json:"check"`
	Result Result `json:"result"`
	Detail string `json:"detail"`
}

// ValidateOptions are the options of `drover validate clusters` and `drover validate application`.
type ValidateOptions struct {
	// Namespace and App name the DRPlacementControl; App empty validates the clusters.
	Namespace, App string
	// Output is "" (a table), json or yaml.
	Output string
	// Kubeconfigs are kubeconfig files of the person for some managed clusters, used instead
	// of the hub's credential.
	Kubeconfigs ClusterKubeconfigs
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// ErrValidationFailed is returned (exit status 1) when a check failed.
var ErrValidationFailed = errors.New("validation failed")

// Validate checks the options before anything is read.
func (o *ValidateOptions) Validate() error {
	switch o.Output {
	case "", "json", "yaml":
		return nil
	}
	return cli.Usage(fmt.Errorf("unknown output format %q: use json or yaml", o.Output))
}

// ValidateClusters checks the hub and every managed cluster: reachability, clocks, drover's and
// the storage's CRDs, the agent, the storage classes the policies name and their replication or
// snapshot classes, and the S3 stores as far as the CLI can tell. It prints a table (or the rows
// as JSON or YAML) and returns an error wrapping ErrValidationFailed when a check failed.
func ValidateClusters(ctx context.Context, hubCfg *rest.Config, w io.Writer, o ValidateOptions) error {
	if err := o.Validate(); err != nil {
		return err
	}
	hub, err := hubClient(hubCfg)
	if err != nil {
		return err
	}
	v := &validator{now: o.Now}
	if v.now == nil {
		v.now = time.Now
	}
	if err := v.clusters(ctx, hub, hubCfg, o.Kubeconfigs); err != nil {
		return err
	}
	return v.finish(w, o.Output)
}

// ValidateApplication checks one application: its DRPlacementControl and policy, its group on
// each cluster, its PVCs and their replication, the age of its last capture, and what a failover
// would need now.
func ValidateApplication(ctx context.Context, hubCfg *rest.Config, w io.Writer, o ValidateOptions) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if o.App == "" {
		return cli.Usage(errors.New("name the application (its DRPlacementControl) to validate"))
	}
	hub, err := hubClient(hubCfg)
	if err != nil {
		return err
	}
	v := &validator{now: o.Now}
	if v.now == nil {
		v.now = time.Now
	}
	if err := v.application(ctx, hub, o); err != nil {
		return err
	}
	return v.finish(w, o.Output)
}

// validator collects the rows of one run.
type validator struct {
	now  func() time.Time
	rows []Row
}

func (v *validator) add(check string, r Result, format string, args ...any) {
	v.rows = append(v.rows, Row{Check: check, Result: r, Detail: fmt.Sprintf(format, args...)})
}

// finish prints the rows and turns failures into the verb's error.
func (v *validator) finish(w io.Writer, format string) error {
	if err := printRows(w, v.rows, format); err != nil {
		return err
	}
	failed, warned := 0, 0
	for _, r := range v.rows {
		switch r.Result {
		case Fail:
			failed++
		case Warn:
			warned++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%w: %d of %d checks failed, %d warned: see their details", ErrValidationFailed, failed, len(v.rows), warned)
	}
	return nil
}

// printRows prints the rows as a table, or as a JSON or YAML list.
func printRows(w io.Writer, rows []Row, format string) error {
	switch format {
	case "json":
		out, err := json.MarshalIndent(map[string]any{"checks": rows}, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(out, '\n'))
		return err
	case "yaml":
		out, err := yaml.Marshal(map[string]any{"checks": rows})
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	}
	tw := cli.NewTabWriter(w)
	fmt.Fprintln(tw, "CHECK\tRESULT\tDETAIL")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Check, r.Result, r.Detail)
	}
	return tw.Flush()
}
