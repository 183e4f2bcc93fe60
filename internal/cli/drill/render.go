package drill

import (
	"fmt"
	"io"
	"strings"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
)

// volumesSection lists, per protected PVC, the point the sandbox started from and its RPO.
func volumesSection(d *v1alpha1.DRDrill) reportSection {
	s := reportSection{title: "Volumes: the point used and the RPO per PVC"}
	if len(d.Status.Volumes) == 0 {
		s.paras = []string{"No point-in-time copy was reported (a readiness-mode drill copies none)."}
		return s
	}
	s.header = []string{"PVC", "POINT", "POINT TIME", "RPO", "SANDBOX PVC"}
	for _, v := range d.Status.Volumes {
		s.rows = append(s.rows, []string{v.PVCNamespace + "/" + v.PVCName, cli.Dash(v.Point), timeText(v.PointTime), secondsText(v.RPOSeconds), cli.Dash(v.SandboxPVC)})
	}
	return s
}

// namespacesSection maps each protected namespace to its sandbox.
func namespacesSection(d *v1alpha1.DRDrill) reportSection {
	s := reportSection{title: "Sandbox namespaces"}
	if len(d.Status.Namespaces) == 0 {
		s.paras = []string{"None reported."}
		return s
	}
	s.header = []string{"PROTECTED NAMESPACE", "SANDBOX"}
	for _, n := range d.Status.Namespaces {
		s.rows = append(s.rows, []string{n.Source, n.Sandbox})
	}
	return s
}

// stepsSection lists the steps with their start, duration, result and message.
func stepsSection(d *v1alpha1.DRDrill) reportSection {
	s := reportSection{title: "Steps"}
	if len(d.Status.Steps) == 0 {
		s.paras = []string{"None reported yet."}
		return s
	}
	s.header = []string{"STEP", "STARTED", "DURATION", "RESULT", "MESSAGE"}
	for _, st := range d.Status.Steps {
		result := string(st.Result)
		if st.Finished == nil {
			result = "running"
		}
		s.rows = append(s.rows, []string{st.Name, timeText(st.Started), stepDuration(st), cli.Dash(result), cli.Dash(st.Message)})
	}
	return s
}

// readinessSection lists what a readiness-mode drill checked and what it could not.
func readinessSection(d *v1alpha1.DRDrill) reportSection {
	s := reportSection{title: "Readiness", paras: []string{"What the drill checked of a recovery without starting it; Skipped is what it could not check."}}
	if len(d.Status.Readiness) == 0 {
		s.paras = append(s.paras, "None reported yet.")
		return s
	}
	s.header = []string{"CHECK", "RESULT", "MESSAGE"}
	for _, c := range d.Status.Readiness {
		s.rows = append(s.rows, []string{c.Name, string(c.Result), cli.Dash(c.Message)})
	}
	return s
}

// checkSection is the check Job's result, message and log tail.
func checkSection(d *v1alpha1.DRDrill) reportSection {
	s := reportSection{title: "Check"}
	ch := d.Status.Check
	if ch == nil {
		s.paras = []string{"Not reported yet."}
		return s
	}
	line := "Result: " + string(ch.Result)
	if ch.Message != "" {
		line += ". " + ch.Message
	}
	s.paras = []string{line}
	if ch.LogTail == "" {
		s.paras = append(s.paras, "No log tail was recorded.")
		return s
	}
	s.paras = append(s.paras, "The log tail: the check container's termination message, as its node reported it (what it wrote to its termination message file, or the end of its log when it failed):")
	s.verbatim = ch.LogTail
	return s
}

// resultSection is a DrillCheck's result and message, or what stands in for it.
func resultSection(title string, c *v1alpha1.DrillCheck, missing string) reportSection {
	s := reportSection{title: title}
	if c == nil {
		s.paras = []string{strings.ToUpper(missing[:1]) + missing[1:] + "."}
		return s
	}
	line := "Result: " + string(c.Result)
	if c.Message != "" {
		line += ". " + c.Message
	}
	s.paras = []string{line}
	return s
}

// markdown renders the report as Markdown: a title, a table of facts, a section per part.
func (r report) markdown(w io.Writer) error {
	p := &cli.Printer{W: w}
	p.Linef("# %s", r.title)
	p.Linef("")
	p.Linef("| | |")
	p.Linef("|---|---|")
	for _, f := range r.facts {
		p.Linef("| %s | %s |", f[0], mdCell(f[1]))
	}
	for _, s := range r.sections {
		p.Linef("")
		p.Linef("## %s", s.title)
		for _, para := range s.paras {
			p.Linef("")
			p.Linef("%s", para)
		}
		if len(s.header) > 0 {
			p.Linef("")
			p.Linef("| %s |", strings.Join(s.header, " | "))
			p.Linef("|%s", strings.Repeat("---|", len(s.header)))
			for _, row := range s.rows {
				cells := make([]string, len(row))
				for i, c := range row {
					cells[i] = mdCell(c)
				}
				p.Linef("| %s |", strings.Join(cells, " | "))
			}
		}
		if s.verbatim != "" {
			fence := mdFence(s.verbatim)
			p.Linef("")
			p.Linef("%stext\n%s\n%s", fence, strings.TrimRight(s.verbatim, "\n"), fence)
		}
	}
	p.Linef("")
	p.Linef("%s", r.footer)
	return p.Err
}

// mdCell is text fit for a Markdown table cell: pipes escaped, lines joined.
func mdCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// mdFence is a code fence longer than any run of backquotes in s.
func mdFence(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// text renders the report as plain text: the facts aligned, each section's table indented.
func (r report) text(w io.Writer) error {
	p := &cli.Printer{W: w}
	p.Linef("%s", r.title)
	p.Linef("")
	width := 0
	for _, f := range r.facts {
		width = max(width, len(f[0]))
	}
	for _, f := range r.facts {
		p.Linef("%-*s  %s", width+1, f[0]+":", f[1])
	}
	for _, s := range r.sections {
		p.Linef("")
		p.Linef("%s:", s.title)
		for _, para := range s.paras {
			p.Linef("  %s", para)
		}
		if len(s.header) > 0 && p.Err == nil {
			tw := cli.NewTabWriter(w)
			fmt.Fprintf(tw, "  %s\n", strings.Join(s.header, "\t"))
			for _, row := range s.rows {
				fmt.Fprintf(tw, "  %s\n", strings.Join(row, "\t"))
			}
			p.Err = tw.Flush()
		}
		for _, l := range strings.Split(strings.TrimRight(s.verbatim, "\n"), "\n") {
			if s.verbatim != "" {
				p.Linef("    %s", l)
			}
		}
	}
	p.Linef("")
	p.Linef("%s", r.footer)
	return p.Err
}
