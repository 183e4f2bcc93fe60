package writer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Status is what a pod's writer reports in its status file.
type Status struct {
	Namespace string    `json:"namespace"`
	Pod       string    `json:"pod"`
	UID       types.UID `json:"uid"`
	// WriterID names the writer's log in each volume.
	WriterID string `json:"writerID"`
	Interval string `json:"interval"`
	// Running is false once the writer stopped (pod deleted or not Running, the controller or
	// the process stopping).
	Running   bool           `json:"running"`
	UpdatedAt time.Time      `json:"updatedAt"`
	Volumes   []VolumeStatus `json:"volumes"`
}

// VolumeStatus counts one volume's writes.
type VolumeStatus struct {
	// Volume is the pod's volume name, PVC the claim it names, Handle the image: what the lab
	// storage knows. Dir is the directory the process writer writes (its mount path), which
	// knows the claim and the path only.
	Volume string `json:"volume"`
	PVC    string `json:"pvc"`
	Handle string `json:"handle,omitempty"`
	Dir    string `json:"dir,omitempty"`
	// Written counts committed records; Rejected writes refused because the image is a
	// secondary; Failed writes that failed otherwise, the last of them described in LastError.
	Written  uint64 `json:"written"`
	Rejected uint64 `json:"rejected"`
	Failed   uint64 `json:"failed"`
	// LastSeq is the writer's last record in the volume: the last it committed, or, before its
	// first commit since it (re)started, the last its log held then (0: none).
	LastSeq   uint64 `json:"lastSeq"`
	LastError string `json:"lastError,omitempty"`
}

// ID is the id of the writer of the pod namespace/name with uid, which names its log in each
// volume: <namespace>.<pod>.<first 8 characters of the UID>.
func ID(namespace, pod string, uid types.UID) string {
	u := string(uid)
	return fmt.Sprintf("%s.%s.%s", namespace, pod, u[:min(8, len(u))])
}

// StatusFile is the status file of the writer of pod namespace/name in the directory dir.
func StatusFile(dir, namespace, pod string) string {
	return filepath.Join(dir, namespace+"."+pod+".json")
}

// ReadStatus reads the status file at path.
func ReadStatus(path string) (Status, error) {
	var st Status
	raw, err := os.ReadFile(path) //nolint:gosec // a status file of the lab
	if err != nil {
		return st, fmt.Errorf("failed to read the writer status %s: %w", path, err)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, fmt.Errorf("writer status %s is damaged: %w", path, err)
	}
	return st, nil
}

// WriteStatus writes st as JSON to path through a rename, so readers never see half a file.
func WriteStatus(path string, st Status) error {
	raw, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return fmt.Errorf("failed to create %s: %w", filepath.Dir(path), err)
	}
	tmp := fmt.Sprintf("%s.tmp-%d", path, time.Now().UnixNano())
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return fmt.Errorf("failed to write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	return nil
}
