//go:build linux

package main

import (
	"os"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/drover-io/drover/internal/lab/writer"
)

// newLabWriterCommand runs the lab's workload writer (internal/lab/writer) inside a pod, over
// the pod's mounted PVCs.
func newLabWriterCommand() *cobra.Command {
	var o writer.ProcessOptions
	cmd := &cobra.Command{
		Use:   "writer --volume [CLAIM=]DIR [--volume [CLAIM=]DIR ...]",
		Short: "Commit the lab's workload records into a pod's volumes (runs inside a lab pod)",
		Long: `Runs inside a pod as its application: every interval it commits the next checksummed,
sequence-numbered record to each volume's log (records/<writer>.log) and then to the index
beside it (records/<writer>.log.index), each fsynced before the record counts as written. With
several volumes, record n goes to the first, then to the next, in the order of --volume. A
restarted writer continues each log after its last valid record. On SIGTERM it finishes the
round, writes its status a last time (running: false) and exits 0.

The writer id, which names the logs, is <namespace>.<pod>.<first 8 characters of the pod UID>,
from $` + writer.EnvNamespace + `, $` + writer.EnvPod + ` and $` + writer.EnvUID + ` (set them from the downward API), unless --id
sets it. The status file is <status dir>/<namespace>.<pod>.json.`,
		Example: `  drover lab writer --volume data-db-0=/data --interval 200ms --status-dir /lab/east/storage/writers`,
		Hidden:  true,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(zap.New())
			w, err := writer.NewProcess(o, os.Getenv)
			if err != nil {
				return err
			}
			st := w.Status()
			ctrl.Log.Info("Starting writer", "writer", st.WriterID, "volumes", len(st.Volumes), "interval", st.Interval, "status", w.StatusPath())
			w.Run(cmd.Context())
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&o.Volumes, "volume", nil, "[CLAIM=]DIR: a volume to write, DIR its mount path, CLAIM its PVC for the status (repeatable, in the order of writes)")
	cmd.Flags().DurationVar(&o.Interval, "interval", 0, "time between two records (default $"+writer.EnvInterval+", else "+writer.DefaultInterval.String()+")")
	cmd.Flags().StringVar(&o.ID, "id", "", "writer id naming the logs (default from $"+writer.EnvNamespace+", $"+writer.EnvPod+", $"+writer.EnvUID+")")
	cmd.Flags().StringVar(&o.StatusDir, "status-dir", "", "directory of the status file (default $"+writer.EnvStatusDir+"; neither: no status file)")
	cmd.Flags().IntVar(&o.PayloadSize, "payload-size", writer.PayloadSize, "payload of every record, in bytes")
	_ = cmd.MarkFlagRequired("volume")
	return cmd
}
