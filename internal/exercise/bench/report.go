package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// columns of the main table.
var columns = []string{"PVCS/APP", "APPS", "FLOOR", "RESTORE FLOOR", "CORES BUSY FLOOR/SETTLED", "PROTECT", "FAILOVER", "RECOVER", "RELOCATE", "P50 PER APP FAILOVER/RELOCATE", "RECORDS LOST",
	"LEFT PROTECTED", "DRPC SYNC LAG P50/P99", "STORAGE SYNC GAP P99/MAX", "VRG WRITES/VRG/MIN", "ALL WRITES/MIN", "HUB RSS", "AGENT RSS", "HUB P99", "AGENT P99", "CHECK"}

// Complete says whether every figure of the result was measured and every action succeeded.
func (r *Result) Complete() bool {
	return r.Err == nil && r.Floor > 0 && r.RestoreFloor > 0 && r.Protect > 0 && r.Failover > 0 && r.Recover > 0 && r.Relocate > 0 &&
		r.RecordsKept > 0 && r.HubRSS > 0 && r.AgentRSS > 0
}

func dur(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

// ratio is a duration and its multiple of the floor.
func ratio(d, floor time.Duration) string {
	if d == 0 {
		return "-"
	}
	if floor == 0 {
		return dur(d)
	}
	return fmt.Sprintf("%s (%.1f×)", dur(d), d.Seconds()/floor.Seconds())
}

func (r *Result) row() []string {
	check := "ok"
	if r.Err != nil {
		check = "FAILED: " + r.Err.Error()
	}
	lost := "-"
	if r.Relocate > 0 {
		lost = fmt.Sprintf("%d of %d", r.RecordsLost, r.RecordsLost+r.RecordsKept)
	}
	return []string{
		fmt.Sprint(r.PVCs), fmt.Sprint(r.N), dur(r.Floor), ratio(r.RestoreFloor, r.Floor), r.busy(), ratio(r.Protect, r.Floor), ratio(r.Failover, r.Floor),
		ratio(r.Recover, r.Floor), ratio(r.Relocate, r.Floor), r.perApp(), lost, r.leftProtected(), r.syncLag(), r.storageGap(),
		fmt.Sprintf("%.1f", r.VRGWritesPerMin), fmt.Sprintf("%.0f", r.AllWritesPerMin), mib(r.HubRSS), mib(r.AgentRSS),
		msOf(r.HubP99), msOf(r.AgentP99), check,
	}
}

// perApp is the median of the applications' own failover and relocation times.
func (r *Result) perApp() string {
	if r.FailoverP50 == 0 && r.RelocateP50 == 0 {
		return "-"
	}
	return dur(r.FailoverP50) + " / " + dur(r.RelocateP50)
}

// busy is how many cores the lab kept busy during the floor and while settled.
func (r *Result) busy() string {
	if r.FloorBusy == 0 && r.SettledBusy == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f / %.2f", r.FloorBusy, r.SettledBusy)
}

// leftProtected is how many DRPCs left Protected while settled, of how many.
func (r *Result) leftProtected() string {
	if r.SyncLags == 0 && r.LeftProtected == 0 {
		return "-"
	}
	return fmt.Sprintf("%d of %d", r.LeftProtected, r.N)
}

// syncLag is the DRPCs' sync lag while settled and over how many syncs.
func (r *Result) syncLag() string {
	if r.SyncLags == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fs / %.2fs (%d syncs)", r.SyncLagP50.Seconds(), r.SyncLagP99.Seconds(), r.SyncLags)
}

// storageGap is how often the storage itself synced while settled.
func (r *Result) storageGap() string {
	if r.StorageGapMax == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0fs / %.0fs", r.StorageGapP99.Seconds(), r.StorageGapMax.Seconds())
}

func msOf(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
}

// hubRows are the hub-fill mode's lines.
func (h *HubFill) lines() []string {
	out := []string{fmt.Sprintf("%d DRPlacementControls (groups of no PVC): %d Deployed and Available after %s",
		h.DRPCs, h.Deployed, dur(h.Fill))}
	if h.Window > 0 {
		out = append(out, fmt.Sprintf("settled, over %s: the hub's requests per second to east %.2f, to west %.2f; hub RSS %s",
			dur(h.Window), h.RequestsPerSecond["east"], h.RequestsPerSecond["west"], mib(h.HubRSS)))
	}
	if h.Err != nil {
		out = append(out, "FAILED: "+h.Err.Error())
	}
	return out
}

// PrintTable writes the report as a text table.
func (rep *Report) PrintTable(w io.Writer) {
	fmt.Fprintf(w, "machine: %s\n", rep.Machine)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(columns, "\t"))
	for i := range rep.Results {
		fmt.Fprintln(tw, strings.Join(rep.Results[i].row(), "\t"))
	}
	_ = tw.Flush()
	if rep.Hub != nil {
		for _, l := range rep.Hub.lines() {
			fmt.Fprintln(w, "hub fill: "+l)
		}
	}
}

// WriteMarkdown writes the report as markdown.
func (rep *Report) WriteMarkdown(w io.Writer) {
	fmt.Fprintf(w, "Machine: %s.\n\n", rep.Machine)
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(columns, " | "), strings.Repeat("---|", len(columns)))
	for i := range rep.Results {
		cells := rep.Results[i].row()
		for j := range cells {
			cells[j] = strings.ReplaceAll(cells[j], "|", `\|`)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	if rep.Hub != nil {
		fmt.Fprintln(w)
		for _, l := range rep.Hub.lines() {
			fmt.Fprintf(w, "- Hub fill: %s\n", l)
		}
	}
}
