package csiaddons

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/drover-io/drover/internal/lab/storage/driver"
	"github.com/drover-io/drover/internal/lab/storage/state"
)

// A group mirror's intent recorded before the receiving group was promoted (csi-addons forced
// the promotion while the sender was still primary) is never applied: the promoted group keeps
// its images and the staged copies go. The same intent applies to a group that is still the
// sender's secondary.
func TestAGroupMirrorRecordedBeforeAPromotionLeavesThePromotedGroupAlone(t *testing.T) {
	for _, tc := range []struct {
		name    string
		group   state.ImageState
		applied bool
	}{
		{"secondary of the sender's epoch", state.ImageState{Role: state.RoleSecondary, Epoch: 2}, true},
		{"promoted since, a newer epoch", state.ImageState{Role: state.RolePrimary, Epoch: 3}, false},
		{"promoted, same epoch", state.ImageState{Role: state.RolePrimary, Epoch: 2}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			dir := t.TempDir()
			g.Expect(state.Write(state.GroupPath(dir, "grp"), tc.group)).To(Succeed())
			intent := groupIntent{Epoch: 2, Taken: time.Now()}
			for _, m := range []string{"a", "b"} {
				g.Expect(os.MkdirAll(state.VolumePath(dir, m), 0o750)).To(Succeed())
				g.Expect(os.WriteFile(filepath.Join(state.VolumePath(dir, m), "record"), []byte("local"), 0o600)).To(Succeed())
				staged := state.GroupStagingPrefix(dir, "grp") + "1-" + m
				g.Expect(os.MkdirAll(staged, 0o750)).To(Succeed())
				g.Expect(os.WriteFile(filepath.Join(staged, "record"), []byte("mirrored"), 0o600)).To(Succeed())
				intent.Members = append(intent.Members, stagedCopy{Handle: m, Staged: staged})
			}
			g.Expect(driver.WriteJSON(state.GroupIntentPath(dir, "grp"), intent)).To(Succeed())

			g.Expect(settleGroup(dir, "grp")).To(Succeed())

			want, role := "local", tc.group.Role
			if tc.applied {
				want, role = "mirrored", state.RoleSecondary
			}
			for _, m := range []string{"a", "b"} {
				got, err := os.ReadFile(filepath.Join(state.VolumePath(dir, m), "record"))
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(string(got)).To(Equal(want), "image %s", m)
				g.Expect(state.GroupStagingPrefix(dir, "grp")+"1-"+m).NotTo(BeADirectory(), "the staged copy is gone")
			}
			st, err := state.Read(state.GroupPath(dir, "grp"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st.Role).To(Equal(role))
			g.Expect(state.GroupIntentPath(dir, "grp")).NotTo(BeAnExistingFile(), "the intent is settled")
		})
	}
}
