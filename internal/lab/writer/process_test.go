package writer

import (
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestNewProcess(t *testing.T) {
	podEnv := map[string]string{EnvNamespace: "ns", EnvPod: "db-0", EnvUID: "0a1b2c3d-0000-4000-8000-000000000000"}
	with := func(env map[string]string, more ...string) map[string]string {
		out := map[string]string{}
		for k, v := range env {
			out[k] = v
		}
		for i := 0; i+1 < len(more); i += 2 {
			out[more[i]] = more[i+1]
		}
		return out
	}
	type want struct {
		id, status string
		pvcs       []string
		interval   time.Duration
	}
	cases := []struct {
		name    string
		opts    func(dir string) ProcessOptions
		env     map[string]string
		want    want
		wantErr string
	}{{
		name: "the pod's identity from the downward API names the logs and the status file",
		opts: func(dir string) ProcessOptions {
			return ProcessOptions{Volumes: []string{"data-a=" + dir, "data-b=" + dir}, StatusDir: "/st"}
		},
		env:  podEnv,
		want: want{id: "ns.db-0.0a1b2c3d", status: "/st/ns.db-0.json", pvcs: []string{"data-a", "data-b"}, interval: DefaultInterval},
	}, {
		name: "--id names the logs, the environment the status directory and the interval",
		opts: func(dir string) ProcessOptions { return ProcessOptions{Volumes: []string{dir}, ID: "w1"} },
		env:  map[string]string{EnvStatusDir: "/st", EnvInterval: "50ms"},
		want: want{id: "w1", status: "/st/w1.json", pvcs: []string{""}, interval: 50 * time.Millisecond},
	}, {
		name: "--interval wins over the environment; no status directory, no status file",
		opts: func(dir string) ProcessOptions {
			return ProcessOptions{Volumes: []string{dir}, Interval: time.Second}
		},
		env:  with(podEnv, EnvInterval, "50ms"),
		want: want{id: "ns.db-0.0a1b2c3d", pvcs: []string{""}, interval: time.Second},
	}, {
		name:    "no volume is refused",
		opts:    func(string) ProcessOptions { return ProcessOptions{} },
		env:     podEnv,
		wantErr: "--volume",
	}, {
		name:    "no id and no pod identity is refused",
		opts:    func(dir string) ProcessOptions { return ProcessOptions{Volumes: []string{dir}} },
		env:     map[string]string{EnvNamespace: "ns", EnvPod: "db-0"},
		wantErr: "downward API",
	}, {
		name: "a volume that is not mounted is refused",
		opts: func(dir string) ProcessOptions {
			return ProcessOptions{Volumes: []string{"data=" + filepath.Join(dir, "missing")}}
		},
		env:     podEnv,
		wantErr: "mount the PVC there",
	}, {
		name:    "an interval in the environment that is not a duration is refused",
		opts:    func(dir string) ProcessOptions { return ProcessOptions{Volumes: []string{dir}} },
		env:     with(podEnv, EnvInterval, "fast"),
		wantErr: EnvInterval,
	}, {
		name: "an interval too short is refused",
		opts: func(dir string) ProcessOptions {
			return ProcessOptions{Volumes: []string{dir}, Interval: time.Millisecond}
		},
		env:     podEnv,
		wantErr: "shorter than",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w, err := NewProcess(tc.opts(t.TempDir()), func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			st := w.Status()
			var pvcs []string
			for _, v := range st.Volumes {
				pvcs = append(pvcs, v.PVC)
			}
			g.Expect(want{id: st.WriterID, status: w.StatusPath(), pvcs: pvcs, interval: w.opts.Interval}).To(Equal(tc.want))
			g.Expect(w.opts.Sync).To(BeTrue(), "the process fsyncs its records")
		})
	}
}

// A pod that sets PodEnv gives the process the id the storage controller's writer gives it.
func TestPodEnvNamesThePodsIdentity(t *testing.T) {
	g := NewWithT(t)
	fields := map[string]string{"metadata.namespace": "app", "metadata.name": "db-1", "metadata.uid": "9f8e7d6c-0000-4000-8000-000000000000"}
	env := map[string]string{}
	for _, e := range PodEnv() {
		g.Expect(e.ValueFrom).NotTo(BeNil())
		g.Expect(e.ValueFrom.FieldRef).NotTo(BeNil())
		env[e.Name] = fields[e.ValueFrom.FieldRef.FieldPath]
	}
	w, err := NewProcess(ProcessOptions{Volumes: []string{t.TempDir()}, StatusDir: "/st"}, func(k string) string { return env[k] })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(w.Status().WriterID).To(Equal(ID("app", "db-1", "9f8e7d6c-0000-4000-8000-000000000000")))
	g.Expect(w.Status().WriterID).To(Equal("app.db-1.9f8e7d6c"))
	g.Expect(w.StatusPath()).To(Equal("/st/app.db-1.json"))
}
