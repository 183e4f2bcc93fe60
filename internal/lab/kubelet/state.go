package kubelet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"k8s.io/klog/v2"
)

// PodState is what `drover lab status` shows of one pod the lab kubelet runs.
type PodState struct {
	Namespace  string           `json:"namespace"`
	Name       string           `json:"name"`
	UID        string           `json:"uid"`
	PodIP      string           `json:"podIP"`
	Containers []ContainerState `json:"containers"`
}

// ContainerState is one container's process: its pid (0 while it is not running), how often it
// was restarted and since when it runs.
type ContainerState struct {
	Name         string    `json:"name"`
	PID          int       `json:"pid"`
	Restarts     int32     `json:"restarts"`
	RunningSince time.Time `json:"runningSince,omitzero"`
	Ready        bool      `json:"ready"`
	LogPath      string    `json:"logPath"`
}

// Pods reports the pods this kubelet runs, sorted by namespace and name.
func (k *Kubelet) Pods() []PodState {
	k.mu.Lock()
	workers := make([]*podWorker, 0, len(k.workers))
	for _, w := range k.workers {
		workers = append(workers, w)
	}
	k.mu.Unlock()
	out := make([]PodState, 0, len(workers))
	for _, w := range workers {
		ps := PodState{Namespace: w.key.Namespace, Name: w.key.Name, UID: string(w.uid), PodIP: w.ip.String()}
		for _, c := range append(append([]*container{}, w.containers...), w.inits...) {
			c.mu.Lock()
			cs := ContainerState{Name: c.spec.Name, PID: c.pid, Restarts: c.restarts, Ready: c.ready, LogPath: c.logPath()}
			if c.running {
				cs.RunningSince = c.startedAt
			}
			c.mu.Unlock()
			ps.Containers = append(ps.Containers, cs)
		}
		out = append(out, ps)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// writeState records Pods in StateDir/state.json for ReadState, so a `drover lab status` in
// another process sees the kubelet's processes.
func (k *Kubelet) writeState(ctx context.Context) {
	k.stateMu.Lock()
	defer k.stateMu.Unlock()
	data, err := json.MarshalIndent(k.Pods(), "", "  ")
	if err == nil {
		tmp := k.stateFile() + ".tmp"
		if err = os.WriteFile(tmp, data, 0o600); err == nil {
			err = os.Rename(tmp, k.stateFile())
		}
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Failed to record the lab kubelet's state", "file", k.stateFile())
	}
}

// ReadState reads the pods that the lab kubelet with this state directory last recorded; none
// when it never ran.
func ReadState(stateDir string) ([]PodState, error) {
	path := filepath.Join(stateDir, "state.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to read lab kubelet state %s: %w", path, err)
	}
	var pods []PodState
	if err := json.Unmarshal(data, &pods); err != nil {
		return nil, fmt.Errorf("failed to decode lab kubelet state %s: %w", path, err)
	}
	return pods, nil
}
