//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/records"
)

// volumeRecords is the records of one copy of a volume, as `drover lab records` prints them.
type volumeRecords struct {
	Cluster string `json:"cluster"`
	PVC     string `json:"pvc"`
	Image   string `json:"image"`
	Dir     string `json:"dir"`
	// Note says how the copy was found when not through its PVC.
	Note   string         `json:"note,omitempty"`
	Report records.Report `json:"report"`
}

type recordsOutput struct {
	Volume     volumeRecords       `json:"volume"`
	Compare    *volumeRecords      `json:"compare,omitempty"`
	Divergence *records.Divergence `json:"divergence,omitempty"`
}

func newLabRecordsCommand(f *labFlags) *cobra.Command {
	var output, compare string
	cmd := &cobra.Command{
		Use:   "records CLUSTER NAMESPACE/PVC",
		Short: "Verify the workload records in the image behind a PVC, or compare two clusters' copies",
		Long: `Reads the records that lab writers (pods labelled lab.drover.io/writer) appended to
the image behind the PVC on CLUSTER and reports, per writer, the records, the last sequence
number, gaps, corrupt and torn records, the index beside the log (which a copy of one instant
never holds ahead of the log) and the last write. With --compare, also reads the copy on
OTHER_CLUSTER (its PVC of the same name, or else the image of the same handle, as mirroring keeps
it) and reports which records one copy has and the other lacks. Gaps and an index ahead of its
log (a torn copy) are findings, not errors: the command fails only when it cannot read the
records.`,
		Example: `  drover lab records east app/data
  drover lab records west app/data --compare east -o json`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "" && output != "json" {
				return fmt.Errorf("unknown output format %q: use -o json, or leave -o out for a table", output)
			}
			namespace, pvc, ok := strings.Cut(args[1], "/")
			if !ok || namespace == "" || pvc == "" || strings.Contains(pvc, "/") {
				return fmt.Errorf("%q is not NAMESPACE/PVC", args[1])
			}
			if compare == args[0] {
				return errors.New("--compare names the cluster being read: name the other one")
			}
			l, err := f.open()
			if err != nil {
				return err
			}
			dir, err := l.VolumeDir(cmd.Context(), args[0], namespace, pvc)
			if err != nil {
				return err
			}
			out := recordsOutput{Volume: volumeRecords{Cluster: args[0], PVC: args[1], Image: filepath.Base(dir), Dir: dir}}
			if out.Volume.Report, err = inspectRecords(dir); err != nil {
				return err
			}
			if compare != "" {
				other, err := otherCopy(cmd, l, compare, namespace, pvc, out.Volume.Image)
				if err != nil {
					return err
				}
				d := records.Compare(out.Volume.Report, other.Report)
				out.Compare, out.Divergence = other, &d
			}
			if output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			return printRecords(cmd.OutOrStdout(), out)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json (default: tables)")
	cmd.Flags().StringVar(&compare, "compare", "", "another cluster whose copy of the image to compare with")
	return cmd
}

// otherCopy reads the copy of the volume on cluster: the volume of the PVC of the same name, or,
// when that cannot be resolved (no such PVC, or the cluster is stopped), the image with the
// same handle, as mirroring keeps it.
func otherCopy(cmd *cobra.Command, l *lab.Lab, cluster, namespace, pvc, handle string) (*volumeRecords, error) {
	v := &volumeRecords{Cluster: cluster, PVC: namespace + "/" + pvc}
	dir, err := l.VolumeDir(cmd.Context(), cluster, namespace, pvc)
	if err != nil {
		byHandle, herr := l.ImageDir(cluster, handle)
		if herr != nil {
			return nil, herr
		}
		dir = byHandle
		v.Note = fmt.Sprintf("read by image handle, the PVC did not resolve: %v", err)
	}
	v.Dir, v.Image = dir, filepath.Base(dir)
	if v.Report, err = inspectRecords(dir); err != nil {
		return nil, fmt.Errorf("cluster %s has no copy of image %s: %w", cluster, handle, err)
	}
	return v, nil
}

// inspectRecords verifies the records of the volume dir; a broken index invariant is a finding
// the report shows (indexColumn), not an error.
func inspectRecords(dir string) (records.Report, error) {
	report, err := records.Verify(dir)
	if ie := (*records.IndexError)(nil); errors.As(err, &ie) {
		return report, nil
	}
	return report, err
}

// indexColumn says what a writer's index holds: its last sequence number, and whether it is
// ahead of the log or damaged (a torn copy).
func indexColumn(r records.WriterReport) string {
	switch {
	case r.IndexDamaged != "":
		return "damaged: " + r.IndexDamaged
	case r.Index == 0:
		return "-"
	case r.CheckIndex() != nil:
		return fmt.Sprintf("%d, ahead of the log: a torn copy", r.Index)
	}
	return fmt.Sprint(r.Index)
}

// printRecords writes a table of writers per copy and the divergence between them.
func printRecords(w io.Writer, out recordsOutput) error {
	if err := printVolumeRecords(w, out.Volume); err != nil {
		return err
	}
	if out.Compare == nil {
		return nil
	}
	fmt.Fprintln(w)
	if err := printVolumeRecords(w, *out.Compare); err != nil {
		return err
	}
	fmt.Fprintln(w)
	a, b := out.Volume.Cluster, out.Compare.Cluster
	if out.Divergence.Identical {
		fmt.Fprintf(w, "%s and %s hold the same records\n", a, b)
	} else {
		fmt.Fprintf(w, "%s and %s differ:\n", a, b)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, d := range out.Divergence.Writers {
		fmt.Fprintf(tw, "  %s\t%s\n", d.Writer, d.Describe(a, b))
	}
	return tw.Flush()
}

func printVolumeRecords(w io.Writer, v volumeRecords) error {
	fmt.Fprintf(w, "%s %s: image %s (%s)\n", v.Cluster, v.PVC, v.Image, v.Dir)
	if v.Note != "" {
		fmt.Fprintf(w, "  %s\n", v.Note)
	}
	if len(v.Report.Writers) == 0 {
		fmt.Fprintln(w, "  no records")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WRITER\tRECORDS\tLAST SEQ\tINDEX\tGAPS\tCORRUPT\tTORN\tLAST WRITE")
	for _, r := range v.Report.Writers {
		gaps := "-"
		if len(r.Gaps) > 0 {
			gaps = fmt.Sprintf("%d missing: %s", r.Missing, records.FormatRanges(r.Gaps))
		}
		torn := "no"
		if r.Torn {
			torn = "yes"
		}
		last := "-"
		if !r.LastWrite.IsZero() {
			last = r.LastWrite.Local().Format("2006-01-02 15:04:05.000")
			last += fmt.Sprintf(" (%s ago)", time.Since(r.LastWrite).Round(100*time.Millisecond))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%d\t%s\t%s\n", r.Writer, r.Records, r.LastSeq, indexColumn(r), gaps, len(r.Corrupt), torn, last)
	}
	return tw.Flush()
}
