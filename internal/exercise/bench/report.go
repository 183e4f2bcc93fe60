package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// columns of the main table.
var columns = []string{"PVCS/APP", "APPS", "FLOOR", "RESTORE FLOOR", "CORES BUSY FLOOR/SETTLED", "PROTECT", "FAILOVER", "RECOVER", "RELOCATE", "P50 PER APP FAILOVER/RELOCATE", "RECORDS LOST",
	"LEFT PROTECTED", "DRPC SYNC LAG P50/P99", "STORAGE SYNC GAP P99/MAX", "VRG WRITES/VRG/MIN", "ALL WRITES/MIN", "HUB RSS", "AGENT RSS", "HUB P99", "AGENT P99", "AGENT CPU", "SEAL/OPEN TIME (OF AGENT CPU)", "SEALED/OPENED OBJECTS, BYTES", "CHECK"}

// Complete says whether every figure of the result was measured and every action succeeded.
func (r *Result) Complete() bool {
	return r.Err == nil && r.Floor > 0 && r.RestoreFloor > 0 && r.Protect > 0 && r.Failover > 0 && r.Recover > 0 && r.Relocate > 0 &&
		r.RecordsKept > 0 && r.HubRSS > 0 && r.AgentRSS > 0 && r.AgentCPU > 0 && r.Sealing.Seals > 0 && r.Sealing.Opens > 0
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
		msOf(r.HubP99), msOf(r.AgentP99), dur(r.AgentCPU), r.sealingTime(), r.sealingVolume(), check,
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

// drillColumns are the columns of the drill mode's table.
var drillColumns = []string{"DRILLS AT ONCE", "PVCS/APP", "MODE", "RTO P50/WORST", "RPO P50/WORST", "CREATED TO LAST RESULT",
	"KEEP ENDED TO ALL PASSED AND TORN DOWN", "PRIMARY REPLICATION HEALTHY", "CHECK"}

func (d *Drills) row() []string {
	check := "ok"
	if d.Err != nil {
		check = "FAILED: " + d.Err.Error()
	}
	rto, rpo := "-", "-"
	if d.RTOs > 0 {
		rto = fmt.Sprintf("%s / %s", secs(d.RTOP50), secs(d.RTOMax))
		if d.RTOs < d.N {
			rto += fmt.Sprintf(" (%d of %d)", d.RTOs, d.N)
		}
	}
	if len(d.Modes) > 0 {
		rpo = fmt.Sprintf("%s / %s", secs(d.RPOP50), secs(d.RPOMax))
	}
	healthy := "-"
	if d.ToTornDown > 0 {
		healthy = fmt.Sprintf("%d of %d", d.ReplicationHealthy, d.N)
		if d.ReplicationNote != "" {
			healthy += " (" + d.ReplicationNote + ")"
		}
	}
	return []string{fmt.Sprint(d.N), fmt.Sprint(d.PVCs), d.modes(), rto, rpo, dur(d.ToResults), dur(d.ToTornDown), healthy, check}
}

// secs is a duration in whole seconds, as the drills report them.
func secs(d time.Duration) string { return fmt.Sprintf("%.0fs", d.Seconds()) }

// printText writes a text table.
func printText(w io.Writer, cols []string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	_ = tw.Flush()
}

// writeMarkdownTable writes a markdown table, its cells' pipes escaped.
func writeMarkdownTable(w io.Writer, cols []string, rows [][]string) {
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(cols, " | "), strings.Repeat("---|", len(cols)))
	for _, r := range rows {
		cells := slices.Clone(r)
		for j := range cells {
			cells[j] = strings.ReplaceAll(cells[j], "|", `\|`)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
}

func (rep *Report) rows() [][]string {
	var rows [][]string
	for i := range rep.Results {
		rows = append(rows, rep.Results[i].row())
	}
	return rows
}

// PrintTable writes the report as text tables: the sizes', then the drill mode's, then the hub
// fill's lines; a mode that did not run is left out.
func (rep *Report) PrintTable(w io.Writer) {
	fmt.Fprintf(w, "machine: %s\n", rep.Machine)
	if len(rep.Results) > 0 {
		printText(w, columns, rep.rows())
	}
	if rep.Drills != nil {
		if len(rep.Results) > 0 {
			fmt.Fprintln(w)
		}
		printText(w, drillColumns, [][]string{rep.Drills.row()})
	}
	if rep.Hub != nil {
		for _, l := range rep.Hub.lines() {
			fmt.Fprintln(w, "hub fill: "+l)
		}
	}
}

// WriteMarkdown writes the report as markdown.
func (rep *Report) WriteMarkdown(w io.Writer) {
	fmt.Fprintf(w, "Machine: %s.\n", rep.Machine)
	if len(rep.Results) > 0 {
		fmt.Fprintln(w)
		writeMarkdownTable(w, columns, rep.rows())
	}
	if rep.Drills != nil {
		fmt.Fprintln(w)
		writeMarkdownTable(w, drillColumns, [][]string{rep.Drills.row()})
	}
	if rep.Hub != nil {
		fmt.Fprintln(w)
		for _, l := range rep.Hub.lines() {
			fmt.Fprintf(w, "- Hub fill: %s\n", l)
		}
	}
}
