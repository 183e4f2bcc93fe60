package lab

import (
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/drover-io/drover/internal/lab/process"
)

// The lab with a real Argo CD runs in internal/lab/argocd's tests (make test-argocd); these
// check the switch without it.

func TestTheLabRefusesAGitOpsToolItDoesNotKnow(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	_, err := New(Options{Dir: filepath.Join(dir, "lab"), BinDir: dir, DroverBinary: "drover", GitOps: "flux"})
	g.Expect(err).To(MatchError(ContainSubstring(`does not know the GitOps tool "flux"`)))
	process.ReleasePorts(filepath.Join(dir, "lab"))
}

func TestALabThatNeverRanArgoCDReportsNoneAndDownHasNothingToStop(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	l, err := New(Options{Dir: filepath.Join(dir, "lab"), BinDir: dir, DroverBinary: "drover", GitOps: GitOpsArgoCD})
	g.Expect(err).NotTo(HaveOccurred())
	defer process.ReleasePorts(l.Dir())
	_, ok, err := l.ArgoCDStatus()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeFalse())
	g.Expect(l.stopGitOps()).To(Succeed())
}
