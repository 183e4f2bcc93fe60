//go:build argocd

package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/argocd"
	"github.com/drover-io/drover/internal/story"
)

// gitOps runs a real Argo CD in the suite's lab (`make tools-argocd` builds it).
const gitOps = lab.GitOpsArgoCD

// The seed's case deployed by a real Argo CD ApplicationSet from the lab's git repository and
// protected through placementRef: drover writes the PlacementDecision in Argo CD's namespace and
// asks the ApplicationSet to refresh after each change; a returning old primary's Application is
// pruned only once its group acknowledged its demotion, and its PVCs stay.
func TestTheWholeStoryWithArgoCD(t *testing.T) {
	c := story.Case{Workload: story.StatefulSetKeepsPVCs, Policy: lab.PolicyVolRep, StorageClass: lab.BlockStorageClass,
		Mode: story.Placement, Namespace: "e2e-argocd", Placement: "e2e-argocd", PlacementNamespace: argocd.Namespace}
	e := env(t)
	inst, err := argocd.Open(filepath.Join(testLab.Dir(), "argocd"))
	if err != nil {
		t.Fatal(err)
	}
	e.StartGitOps = func(ctx context.Context, c story.Case) error {
		return inst.CreateApplicationSet(ctx, e.Hub, argocd.AppSetOptions{Name: c.Placement, Placement: c.Placement, AppNamespace: c.Namespace})
	}
	began := time.Now()
	r := story.New(e, c, lab.East)
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	err = r.Full(context.Background(), true)
	if cerr := r.Close(); cerr != nil {
		t.Error(cerr)
	}
	var table writerBuffer
	story.PrintTable(&table, r.Steps)
	t.Logf("%s with Argo CD in %s; longest overlap after a return: %s\n%s", c.Name(), time.Since(began).Round(time.Second),
		r.Overlap().Round(100*time.Millisecond), table)
	if err != nil {
		t.Fatal(err)
	}
}
