//go:build linux

package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drover-io/drover/internal/lab/records"
)

// appendRecords writes records 1..last of writer into dir, skipping the sequence numbers in skip.
func appendRecords(t *testing.T, dir, writer string, last uint64, skip ...uint64) records.Report {
	t.Helper()
	now := time.Now()
	for seq := uint64(1); seq <= last; seq++ {
		skipped := false
		for _, s := range skip {
			skipped = skipped || s == seq
		}
		if skipped {
			continue
		}
		if err := records.Append(dir, writer, seq, 16, now); err != nil {
			t.Fatal(err)
		}
	}
	report, err := records.Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	return report
}

func TestPrintRecordsShowsGapsAndWhatTheCopyLacks(t *testing.T) {
	const writer = "app.db-0.1234abcd"
	east := appendRecords(t, t.TempDir(), writer, 20, 7)
	west := appendRecords(t, t.TempDir(), writer, 12, 7)
	div := records.Compare(east, west)
	var out strings.Builder
	err := printRecords(&out, recordsOutput{
		Volume:     volumeRecords{Cluster: "east", PVC: "app/data-db-0", Image: "pvc-1", Dir: "/east", Report: east},
		Compare:    &volumeRecords{Cluster: "west", PVC: "app/data-db-0", Image: "pvc-1", Dir: "/west", Report: west},
		Divergence: &div,
	})
	if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"east app/data-db-0: image pvc-1 (/east)",
		"1 missing: 7",
		"east and west differ:",
		"west is missing 13..20 (8 records)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}

func TestPrintRecordsSaysIdenticalCopiesHoldTheSameRecords(t *testing.T) {
	const writer = "app.db-0.1234abcd"
	a := appendRecords(t, t.TempDir(), writer, 5)
	b := appendRecords(t, t.TempDir(), writer, 5)
	div := records.Compare(a, b)
	var out strings.Builder
	if err := printRecords(&out, recordsOutput{
		Volume:  volumeRecords{Cluster: "east", Report: a},
		Compare: &volumeRecords{Cluster: "west", Report: b}, Divergence: &div,
	}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "east and west hold the same records") {
		t.Errorf("identical copies not reported as such:\n%s", out.String())
	}
}

func TestRecordsShowAnIndexAheadOfItsLogAsATornCopy(t *testing.T) {
	const writer = "app.db-0.1234abcd"
	dir := t.TempDir()
	for seq := uint64(1); seq <= 5; seq++ {
		if err := records.Commit(dir, writer, seq, 16, time.Now(), false); err != nil {
			t.Fatal(err)
		}
	}
	// The index names record 7, which the log lacks: its log was copied before its index.
	if err := os.WriteFile(records.IndexPath(dir, writer), []byte("6\n7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	report, err := inspectRecords(dir)
	if err != nil {
		t.Fatalf("an index ahead of its log is a finding, not an error: %v", err)
	}
	var out strings.Builder
	if err := printRecords(&out, recordsOutput{Volume: volumeRecords{Cluster: "west", Report: report}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "7, ahead of the log: a torn copy") {
		t.Errorf("the index ahead of the log is not shown:\n%s", out.String())
	}
}
