package story

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestTheTableShowsKeptLostAndTheBoundOnlyForDataMovingActions(t *testing.T) {
	var b bytes.Buffer
	PrintTable(&b, []Step{
		{Action: "protect", From: "east", To: "east", Duration: 2 * time.Second},
		{Action: "drill", From: "east", To: "west", Duration: 12 * time.Second, Kept: 42, LossBound: 3 * time.Second},
		{Action: "drill (readiness)", From: "east", To: "west", Duration: 9 * time.Second, Note: "8 checks passed, 0 failed, 2 not possible"},
		{Action: "failover", From: "east", To: "west", Duration: 1500 * time.Millisecond, Kept: 7, Lost: 31, LossBound: 4 * time.Second},
		{Action: "fail back (relocate)", From: "west", To: "east", Duration: 3 * time.Second, Kept: 644},
		{Action: "relocate", From: "east", To: "west", Err: errors.New("lost 2")},
	})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 7 {
		t.Fatalf("want a header and 6 rows, got:\n%s", b.String())
	}
	for i, want := range [][]string{
		{"protect", "east → east", "2s", "-", "-", "-", "ok"},
		{"drill", "east → west", "12s", "42 in the sandbox", "-", "RPO 3s", "ok"},
		{"drill (readiness)", "east → west", "9s", "-", "-", "8 checks passed, 0 failed, 2 not possible", "ok"},
		{"failover", "east → west", "1.5s", "7", "31", "writes of the last 4s", "ok"},
		{"fail back (relocate)", "west → east", "3s", "644", "0", "0 (no loss allowed)", "ok"},
		{"relocate", "east → west", "0s", "0", "0", "0 (no loss allowed)", "FAILED"},
	} {
		for _, cell := range want {
			if !strings.Contains(lines[i+1], cell) {
				t.Errorf("row %d %q lacks %q", i+1, lines[i+1], cell)
			}
		}
	}
}
