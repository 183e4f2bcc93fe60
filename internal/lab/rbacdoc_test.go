package lab_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/labtest"
)

// docListings are the identities whose rights docs/security.md lists, as `kubectl auth can-i
// --list` prints them in drover-system on a managed cluster.
var docListings = []string{"drover-hub", "drover-agent"}

// TestTheSecurityDocListsWhatTheIdentitiesMayDoOnAManagedCluster compares the listings of
// docs/security.md ("What the identities may do, as a lab cluster reports it") with what the
// lab's east, where drover is installed from its manifests and joined, reports for the same
// command: a rule added to or removed from a role must be seen in the document too. On a
// difference it prints the listing to paste.
func TestTheSecurityDocListsWhatTheIdentitiesMayDoOnAManagedCluster(t *testing.T) {
	root, err := labtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sa := range docListings {
		t.Run(sa, func(t *testing.T) {
			g := NewWithT(t)
			want, ok := documentedListing(string(doc), sa)
			g.Expect(ok).To(BeTrue(), "docs/security.md has no `kubectl auth can-i --list` block for %s", sa)
			out := kubectl(g, lab.East, append([]string{"auth", "can-i", "--list", "-n", lab.DroverNamespace}, impersonate(sa)...)...)
			got := resourceRows(out)
			if !slices.Equal(got, want) {
				t.Errorf("docs/security.md's listing of %s is not what east reports.\nrows east reports that the document lacks:\n  %s\nrows the document lists that east does not report:\n  %s\nthe listing to paste (non-resource URL rows left out):\n%s",
					sa, strings.Join(missing(got, want), "\n  "), strings.Join(missing(want, got), "\n  "), pasteable(out))
			}
		})
	}
}

// impersonate are kubectl's flags that act as a ServiceAccount of drover-system with the
// groups the API server gives it.
func impersonate(sa string) []string {
	return []string{"--as=system:serviceaccount:" + lab.DroverNamespace + ":" + sa,
		"--as-group=system:serviceaccounts", "--as-group=system:serviceaccounts:" + lab.DroverNamespace, "--as-group=system:authenticated"}
}

// documentedListing is the rows of the console block of the document whose command names sa,
// its header included.
func documentedListing(doc, sa string) ([]string, bool) {
	at := strings.Index(doc, "--as=system:serviceaccount:"+lab.DroverNamespace+":"+sa+" ")
	if at < 0 {
		return nil, false
	}
	rest := doc[at:]
	end := strings.Index(rest, "```")
	if end < 0 {
		return nil, false
	}
	lines := strings.Split(rest[:end], "\n")
	// The command's two lines, then the listing.
	for i, l := range lines {
		if strings.HasPrefix(l, "Resources ") {
			return resourceRows(strings.Join(lines[i:], "\n")), true
		}
	}
	return nil, false
}

// resourceRows are the header and the resource rows of a `kubectl auth can-i --list` output,
// each with its runs of spaces folded: the rows of non-resource URLs (discovery, /healthz and
// the like, which every authenticated user gets) are left out, as the document leaves them out.
func resourceRows(out string) []string {
	var rows []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(f[0], "[/") {
			continue
		}
		rows = append(rows, strings.Join(f, " "))
	}
	return rows
}

// missing are the rows of a that b lacks.
func missing(a, b []string) []string {
	var out []string
	for _, r := range a {
		if !slices.Contains(b, r) {
			out = append(out, r)
		}
	}
	return out
}

// pasteable is kubectl's output without the rows of non-resource URLs.
func pasteable(out string) string {
	var keep []string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if f := strings.Fields(l); len(f) > 0 && !strings.HasPrefix(f[0], "[/") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
