package crds_test

import (
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/drover-io/drover/internal/lab/crds"
	"github.com/drover-io/drover/internal/lab/crds/upstream"
)

// TestLabCRDsMatchUpstream compares every lab CRD of an external kind with the upstream CRD of
// its group and kind (upstream.Dir: $DROVER_UPSTREAM_APIS, .cache/upstream-apis or
// ../shared/upstream-apis). A lab CRD with no upstream counterpart fails: drover would be tested
// against an API nobody serves. Without the upstream CRDs it skips, naming the command that
// downloads them, unless DROVER_REQUIRE_UPSTREAM_APIS=1 (CI) makes that a failure.
func TestLabCRDsMatchUpstream(t *testing.T) {
	dir, err := upstream.Dir()
	upstream.Require(t, err)
	upstreamCRDs, err := crds.LoadUpstream(dir)
	if err != nil {
		t.Fatal(err)
	}
	lab, err := crds.LoadLab()
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[schema.GroupKind]crds.File{}
	for _, u := range upstreamCRDs {
		byKind[u.GroupKind()] = u
	}
	for _, l := range lab {
		t.Run(l.GroupKind().String(), func(t *testing.T) {
			u, ok := byKind[l.GroupKind()]
			if why, exempt := withoutUpstreamFile[l.GroupKind()]; !ok && exempt {
				t.Logf("%s: %s", l.GroupKind(), why)
				return
			}
			if !ok {
				t.Fatalf("%s defines %s, which no upstream CRD in %s defines", l.Name, l.GroupKind(), dir)
			}
			for _, d := range crds.Compare(l.CRD, u.CRD) {
				t.Errorf("%s %s (upstream %s): %s", l.Name, l.GroupKind().Kind, u.Name, d)
			}
		})
	}
}

// withoutUpstreamFile are the lab kinds that the upstream CRDs (upstream/SOURCES.tsv) have no
// CRD of, and why their schema is right without one.
var withoutUpstreamFile = map[schema.GroupKind]string{
	{Group: "multicluster.x-k8s.io", Kind: "ServiceExport"}: "the Multi-Cluster Services API (KEP-1645) defines an empty spec and status.conditions, the only fields the lab has",
}

func file(name, group, kind string) crds.File {
	return crds.File{Name: name, CRD: &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Group: group, Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind},
	}}}
}

func names(files []crds.File) []string {
	out := make([]string, 0, len(files))
	for _, f := range files {
		out = append(out, f.Name)
	}
	return out
}

func TestReplaceServesUpstreamInPlaceOfTheLab(t *testing.T) {
	lab := []crds.File{file("lab-a", "a.io", "A"), file("lab-b", "b.io", "B")}
	upstream := []crds.File{file("up-c", "c.io", "C"), file("up-a", "a.io", "A")}
	got, err := crds.Replace(lab, upstream)
	if err != nil {
		t.Fatal(err)
	}
	// The lab's A is upstream's, B has no upstream CRD and stays the lab's, C is upstream's only.
	if want := []string{"up-a", "lab-b", "up-c"}; !slices.Equal(names(got), want) {
		t.Fatalf("Replace = %v, want %v", names(got), want)
	}
}

func TestReplaceRefusesTwoUpstreamCRDsOfOneKind(t *testing.T) {
	upstream := []crds.File{file("up-a", "a.io", "A"), file("up-a2", "a.io", "A")}
	if _, err := crds.Replace(nil, upstream); err == nil {
		t.Fatal("Replace accepted two upstream CRDs of a.io/A")
	}
}
