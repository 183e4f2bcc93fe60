package repocheck

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/drover-io/drover/internal/modroot"
)

// The repository tells its history by commits, dates and versions: no document, comment or
// identifier names a numbered stage of the project's making (a session, issue, stop or round of
// the work followed by its number, or the number alone after a hash sign). What such a
// reference meant is written instead: the commit and its date, or the behaviour itself. The
// examples below write N for the number, so that this file passes its own rule.

// stagePatterns match a numbered stage of the work. Each is checked after citations are blanked.
var stagePatterns = []*regexp.Regexp{
	// "session N", "Issue N's", "stage N", "rounds N-M", "stop #N", "issue_N".
	regexp.MustCompile(`(?i)\b(session|stage|round|stop|issue|iteration|milestone|sprint|pr|pull request)s?[ _-]?#?[0-9]+\b`),
	// An identifier that carries one: "testSessionN", "afterIssueN".
	regexp.MustCompile(`[a-z0-9](Session|Stage|Round|Stop|Issue|Iteration|Milestone|Sprint)s?_?[0-9]+`),
	// The work's sessions, numbered or not: this one, the next, the other ones.
	regexp.MustCompile(`(?i)\b(this|that|next|previous|earlier|later|other|another) sessions?\b`),
	// An issue number not written as another project's citation: "(#N)", "drover#N" (an HTML
	// entity, an ampersand before the hash sign, aside).
	regexp.MustCompile(`(^|[^&])#[0-9]+\b`),
}

// citations are references to another project's issue or pull request, which are not the
// history of drover's making: "owner/repo#N" and its address on the forge. They are
// blanked before stagePatterns are checked, so a citation in that form is always allowed.
var citations = []*regexp.Regexp{
	regexp.MustCompile(`\b[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+#[0-9]+\b`),
	regexp.MustCompile(`https?://[^\s)>\]]+`),
}

// stageWords are what every stage pattern contains: a line with none of them is skipped
// before the patterns run.
var stageWords = []string{"session", "stage", "round", "stop", "issue", "iteration", "milestone", "sprint", "pr", "pull request", "#"}

// stageReferences returns the stage references of one line, citations aside.
func stageReferences(line string) []string {
	lower := strings.ToLower(line)
	if !slices.ContainsFunc(stageWords, func(w string) bool { return strings.Contains(lower, w) }) {
		return nil
	}
	for _, c := range citations {
		line = c.ReplaceAllStringFunc(line, func(s string) string { return strings.Repeat(" ", len(s)) })
	}
	var found []string
	for _, p := range stagePatterns {
		for _, m := range p.FindAllString(line, -1) {
			found = append(found, strings.TrimSpace(m))
		}
	}
	return found
}

// textFiles lists the tracked files the rule covers: Go, Markdown, YAML, Makefiles and shell.
func textFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--", "*.go", "*.md", "*.yaml", "*.yml", "*.sh", "Makefile", "*/Makefile")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files
}

// stageLines returns "file:line: text [matches]" for every line of the file that names a stage.
func stageLines(root, file string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(root, file))
	if os.IsNotExist(err) {
		return nil, nil // tracked but deleted in the work tree
	}
	if err != nil {
		return nil, fmt.Errorf("failed to read file %s: %w", file, err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for n := 1; sc.Scan(); n++ {
		if refs := stageReferences(sc.Text()); len(refs) > 0 {
			out = append(out, fmt.Sprintf("%s:%d: %s %q", file, n, strings.TrimSpace(sc.Text()), refs))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("failed to scan file %s: %w", file, err)
	}
	return out, nil
}

func TestNoDocumentCommentOrIdentifierNamesAStageOfTheWork(t *testing.T) {
	root, err := modroot.Find()
	if err != nil {
		t.Fatal(err)
	}
	files := textFiles(t, root)
	if len(files) == 0 {
		t.Fatal("git ls-files listed no file: is this a git checkout?")
	}
	var bad []string
	for _, f := range files {
		lines, err := stageLines(root, f)
		if err != nil {
			t.Fatal(err)
		}
		bad = append(bad, lines...)
	}
	if len(bad) > 0 {
		t.Errorf("%d lines name a numbered stage of the project's making; say what it means today "+
			"(the commit and its date, or the behaviour), or cite another project's issue as owner/repo#N:\n%s",
			len(bad), strings.Join(bad, "\n"))
	}
}

func TestTheStageMatcherCatchesStagesAndPassesCitations(t *testing.T) {
	// The planted lines are built from parts so that this file passes its own rule.
	num := func(word, n string) string { return word + " " + n }
	for _, line := range []string{
		"// measured in " + num("session", "15") + ", before the ledger",
		"see docs/benchmarks.md (" + num("Issue", "15") + "'s second hole)",
		"the runs of " + num("stop", "39") + " and " + num("round", "3"),
		"# " + num("Stage", "2") + ": the hub",
		"func test" + "Session" + "16Runs(t *testing.T) {",
		"what " + "this" + " session" + " measured",
		"fixed in (" + "#" + "16)",
		"as drover" + "#" + "16 said",
	} {
		if refs := stageReferences(line); len(refs) == 0 {
			t.Errorf("the matcher passed %q, which names a stage of the work", line)
		}
	}
	for _, line := range []string{
		"unlike VolSync's users' complaint (backube/volsync" + "#" + "1167), every rule",
		"upstream: https://github.com/backube/volsync/issues/" + "1167",
		"the PV binder's one worker (kubernetes/kubernetes" + "#" + "12345, csi-addons/kubernetes-csi-addons" + "#" + "7)",
		"an entity &" + "#" + "39; in a page",
		"before the ledger (commit 2596a40, 2026-12-01), two claims could both win",
		"// start launches c detached from the caller (its own session)",
		"the lab storage mirrors around 5 s behind; step 1 of 2",
		"const rounds = 20",
	} {
		if refs := stageReferences(line); len(refs) > 0 {
			t.Errorf("the matcher flagged %q (%q), which names no stage of the work", line, refs)
		}
	}
}
