package writer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The environment `drover lab writer` reads: the pod's identity from the downward API (env
// fieldRef metadata.namespace, metadata.name, metadata.uid), and defaults of two flags.
const (
	EnvNamespace = "POD_NAMESPACE"
	EnvPod       = "POD_NAME"
	EnvUID       = "POD_UID"
	// EnvInterval is the default of --interval, so a pod can take it from its
	// lab.drover.io/writer-interval annotation through the downward API.
	EnvInterval = "LAB_WRITER_INTERVAL"
	// EnvStatusDir is the default of --status-dir: the lab sets it to the cluster's writers
	// directory (<data dir>/writers), where the storage controller's writers keep theirs.
	EnvStatusDir = "LAB_WRITER_STATUS_DIR"
)

// ProcessOptions are the options of `drover lab writer`, the writer as a process in a pod.
type ProcessOptions struct {
	// Volumes are the directories to write, [CLAIM=]DIR each, in the order of their writes.
	Volumes []string
	// Interval is the time between two records; 0: $LAB_WRITER_INTERVAL, else DefaultInterval.
	Interval time.Duration
	// ID names the logs; empty: ID of $POD_NAMESPACE, $POD_NAME, $POD_UID.
	ID string
	// StatusDir is where the status file <namespace>.<pod>.json (<id>.json without the pod's
	// names) goes; empty: $LAB_WRITER_STATUS_DIR; neither: no status file.
	StatusDir string
	// PayloadSize is the payload of every record, in bytes.
	PayloadSize int
}

// NewProcess returns the writer `drover lab writer` runs: every record fsynced. getenv reads
// the environment (os.Getenv).
func NewProcess(o ProcessOptions, getenv func(string) string) (*Writer, error) {
	if len(o.Volumes) == 0 {
		return nil, fmt.Errorf("no volume to write: name each with --volume [CLAIM=]DIR, DIR the PVC's mount path")
	}
	st := Status{Namespace: getenv(EnvNamespace), Pod: getenv(EnvPod), UID: types.UID(getenv(EnvUID)), WriterID: o.ID}
	if st.WriterID == "" {
		if st.Namespace == "" || st.Pod == "" || st.UID == "" {
			return nil, fmt.Errorf("no writer id: set --id, or %s, %s and %s from the downward API (fieldRef metadata.namespace, metadata.name, metadata.uid)",
				EnvNamespace, EnvPod, EnvUID)
		}
		st.WriterID = ID(st.Namespace, st.Pod, st.UID)
	}
	dirs := make(Dirs, 0, len(o.Volumes))
	for _, v := range o.Volumes {
		claim, dir, found := strings.Cut(v, "=")
		if !found {
			claim, dir = "", v
		}
		fi, err := os.Stat(dir)
		if err != nil {
			return nil, fmt.Errorf("failed to find volume directory %s: mount the PVC there, or name its mount path in --volume: %w", dir, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("volume %s is not a directory: name the PVC's mount path in --volume", dir)
		}
		dirs = append(dirs, dir)
		st.Volumes = append(st.Volumes, VolumeStatus{PVC: claim, Dir: dir})
	}
	interval, err := processInterval(o.Interval, getenv(EnvInterval))
	if err != nil {
		return nil, err
	}
	opts := Options{Interval: interval, PayloadSize: o.PayloadSize, Sync: true}
	statusDir := o.StatusDir
	if statusDir == "" {
		statusDir = getenv(EnvStatusDir)
	}
	switch {
	case statusDir == "":
	case st.Namespace != "" && st.Pod != "":
		opts.StatusPath = StatusFile(statusDir, st.Namespace, st.Pod)
	default:
		opts.StatusPath = filepath.Join(statusDir, st.WriterID+".json")
	}
	return New(st, dirs, opts)
}

// processInterval is the flag's interval, else the environment's, else DefaultInterval.
func processInterval(flag time.Duration, env string) (time.Duration, error) {
	switch {
	case flag != 0:
		return flag, nil
	case env == "":
		return DefaultInterval, nil
	}
	d, err := time.ParseDuration(env)
	if err != nil {
		return 0, fmt.Errorf("%s=%q is not a duration: set it as \"200ms\", or set --interval", EnvInterval, env)
	}
	return d, nil
}

// StatusPath is the writer's status file; empty when it writes none.
func (w *Writer) StatusPath() string { return w.opts.StatusPath }

// PodEnv is the environment a writer pod's container takes from the downward API, which
// NewProcess reads as the pod's identity.
func PodEnv() []corev1.EnvVar {
	field := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	return []corev1.EnvVar{
		field(EnvNamespace, "metadata.namespace"), field(EnvPod, "metadata.name"), field(EnvUID, "metadata.uid"),
	}
}
