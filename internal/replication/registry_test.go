package replication_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
)

func TestRegistrySelectsTheBackendOfAPVCsStorageClass(t *testing.T) {
	volRep := replication.NewFake(v1alpha1.BackendVolRep)
	reg, err := replication.NewRegistry(volRep)
	if err != nil {
		t.Fatal(err)
	}
	byClass := func(class string, b v1alpha1.ReplicationBackend) v1alpha1.StorageClassBackend {
		return v1alpha1.StorageClassBackend{StorageClassName: class, Backend: b}
	}
	byProvisioner := func(p string, b v1alpha1.ReplicationBackend) v1alpha1.StorageClassBackend {
		return v1alpha1.StorageClassBackend{Provisioner: p, Backend: b}
	}
	tests := []struct {
		name      string
		entries   []v1alpha1.StorageClassBackend
		wantErr   error
		wantInMsg string
	}{
		{
			name:    "an entry naming the class selects its backend",
			entries: []v1alpha1.StorageClassBackend{byClass("fast", v1alpha1.BackendVolRep)},
		},
		{
			name:    "an entry naming the provisioner selects its backend",
			entries: []v1alpha1.StorageClassBackend{byProvisioner("rbd.csi", v1alpha1.BackendVolRep)},
		},
		{
			name: "the class entry wins over the provisioner entry",
			entries: []v1alpha1.StorageClassBackend{
				byProvisioner("rbd.csi", v1alpha1.BackendVolSync), byClass("fast", v1alpha1.BackendVolRep),
			},
		},
		{
			name: "entries for other classes and provisioners do not match",
			entries: []v1alpha1.StorageClassBackend{
				byClass("slow", v1alpha1.BackendVolRep), byProvisioner("cephfs.csi", v1alpha1.BackendVolRep),
			},
			wantErr:   replication.ErrNoBackend,
			wantInMsg: `no storageClassBackends entry names StorageClass "fast" (provisioner rbd.csi) or its provisioner: add one`,
		},
		{
			name:      "no entries at all is none",
			wantErr:   replication.ErrNoBackend,
			wantInMsg: "add one",
		},
		{
			name:      "two entries naming the class are several",
			entries:   []v1alpha1.StorageClassBackend{byClass("fast", v1alpha1.BackendVolRep), byClass("fast", v1alpha1.BackendVolSync)},
			wantErr:   replication.ErrSeveralBackends,
			wantInMsg: "storageClassBackends has 2 entries for StorageClass \"fast\" (provisioner rbd.csi): storageClassName fast → VolRep, storageClassName fast → VolSync; keep one",
		},
		{
			name:      "two entries naming the provisioner are several",
			entries:   []v1alpha1.StorageClassBackend{byProvisioner("rbd.csi", v1alpha1.BackendVolRep), byProvisioner("rbd.csi", v1alpha1.BackendVolRep)},
			wantErr:   replication.ErrSeveralBackends,
			wantInMsg: "provisioner rbd.csi → VolRep, provisioner rbd.csi → VolRep",
		},
		{
			name:      "a backend the agent does not provide is named",
			entries:   []v1alpha1.StorageClassBackend{byClass("fast", v1alpha1.BackendVolSync)},
			wantErr:   replication.ErrBackendNotAvailable,
			wantInMsg: "backend VolSync, chosen for StorageClass \"fast\" (provisioner rbd.csi) by storageClassBackends, is not implemented by this drover agent yet",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := reg.Select(tt.entries, "fast", "rbd.csi")
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Select: %v", err)
				}
				if b != volRep {
					t.Fatalf("Select returned %v, want the VolRep backend", b.Name())
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Select error %v, want %v", err, tt.wantErr)
			}
			var selErr *replication.SelectionError
			if !errors.As(err, &selErr) {
				t.Fatalf("Select error %T is not a *SelectionError", err)
			}
			if msg := err.Error(); !contains(msg, tt.wantInMsg) {
				t.Fatalf("message %q does not contain %q", msg, tt.wantInMsg)
			}
		})
	}
}

func TestNewRegistryRefusesDuplicatesAndNil(t *testing.T) {
	if _, err := replication.NewRegistry(replication.NewFake(v1alpha1.BackendVolRep), replication.NewFake(v1alpha1.BackendVolRep)); err == nil {
		t.Fatal("two backends named VolRep were accepted")
	}
	if _, err := replication.NewRegistry(nil); err == nil {
		t.Fatal("a nil backend was accepted")
	}
}

func TestResultsSayWhatTheyAre(t *testing.T) {
	tests := []struct {
		name   string
		result replication.Result
		done   bool
		want   string
	}{
		{"done is done", replication.Done(), true, "Done"},
		{"retry carries its delay and reason", replication.Retry(2e9, "Progressing", "waiting"), false, "Retry after 2s (Progressing: waiting)"},
		{"failed carries its reason", replication.Failed("NoReplicationClass", "create one"), false, "Failed (NoReplicationClass: create one)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.result.IsDone() != tt.done || tt.result.String() != tt.want {
				t.Fatalf("got %v %q, want %v %q", tt.result.IsDone(), tt.result.String(), tt.done, tt.want)
			}
		})
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestRegistryWithBothBackendsSelectsVolSyncForItsClass(t *testing.T) {
	reg, err := replication.NewRegistry(replication.NewFake(v1alpha1.BackendVolRep), replication.NewFake(v1alpha1.BackendVolSync))
	if err != nil {
		t.Fatal(err)
	}
	entries := []v1alpha1.StorageClassBackend{
		{Provisioner: "file.csi", Backend: v1alpha1.BackendVolRep}, {StorageClassName: "shared-fs", Backend: v1alpha1.BackendVolSync},
	}
	b, err := reg.Select(entries, "shared-fs", "file.csi")
	if err != nil || b.Name() != v1alpha1.BackendVolSync {
		t.Fatalf("Select() = %v, %v; want the VolSync backend", b, err)
	}
	if b, ok := reg.Backend(v1alpha1.BackendVolSync); !ok || b.Name() != v1alpha1.BackendVolSync {
		t.Fatalf("Backend(VolSync) = %v, %v; want the VolSync backend", b, ok)
	}
	if _, err := reg.Select(entries, "other-fs", "nfs.csi"); !errors.Is(err, replication.ErrNoBackend) {
		t.Fatalf("Select() of a class nothing names = %v; want ErrNoBackend", err)
	}
}
