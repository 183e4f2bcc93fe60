package version

import (
	"bytes"
	"strings"
	"testing"
)

func TestPrintWritesVersionAndCommit(t *testing.T) {
	oldVersion, oldCommit := Version, Commit
	t.Cleanup(func() { Version, Commit = oldVersion, oldCommit })
	Version, Commit = "v1.2.3", "0123abcd"

	var out bytes.Buffer
	if err := Print(&out); err != nil {
		t.Fatalf("Print: %v", err)
	}
	for _, want := range []string{"version: v1.2.3\n", "commit: 0123abcd\n", "go: go", "platform: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("Print wrote %q, want it to contain %q", out.String(), want)
		}
	}
}

func TestPublishedFitsTheAPIBound(t *testing.T) {
	oldVersion := Version
	t.Cleanup(func() { Version = oldVersion })
	for _, v := range []string{"v1.2.3", strings.Repeat("x", MaxPublished), strings.Repeat("y", MaxPublished+10)} {
		Version = v
		got := Published()
		if len(got) > MaxPublished || !strings.HasPrefix(v, got) || (len(v) <= MaxPublished && got != v) {
			t.Errorf("Published() with Version %q = %q, want it whole or cut to %d bytes", v, got, MaxPublished)
		}
	}
}
