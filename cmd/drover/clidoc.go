package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/drover-io/drover/internal/cli"
)

// cliDocMarker separates docs/cli.md's prose, written by hand, from the command reference
// generated from the commands below it.
const cliDocMarker = "<!-- Everything below is generated from the commands (make cli-docs): edit the commands' help, not this. -->"

// renderCLIDoc is docs/cli.md: its prose up to the marker, then the marker and the reference
// of every command of root.
func renderCLIDoc(current string, root *cobra.Command) (string, error) {
	prose, _, found := strings.Cut(current, cliDocMarker)
	if !found {
		return "", fmt.Errorf("docs/cli.md lacks the line %q that starts the generated reference", cliDocMarker)
	}
	var b strings.Builder
	b.WriteString(prose)
	b.WriteString(cliDocMarker + "\n\n")
	writeCLIReference(&b, root)
	return b.String(), nil
}

// connectionFlags are kubectl's connection flags every client verb takes, by name, with the
// usage that tells them from a verb's own flag of the same name.
func connectionFlags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("connection", pflag.ContinueOnError)
	(&cli.Connection{}).AddHubFlags(fs)
	return fs
}

// writeCLIReference writes the connection flags once, then a section per visible command.
func writeCLIReference(w io.Writer, root *cobra.Command) {
	conn := connectionFlags()
	fmt.Fprintln(w, "## Command reference")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "### Connection flags")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Every verb that talks to the hub (status, plan, failover, relocate, protect, unprotect, drill, version,")
	fmt.Fprintln(w, "the cluster verbs) takes kubectl's connection flags, with kubectl's meanings; `-n` names the")
	fmt.Fprintln(w, "applications' namespace wherever it is offered. kubectl's `--cluster` is left out: drover's")
	fmt.Fprintln(w, "`--cluster` names a DRCluster. On `cluster join` and `cluster unjoin`, `--server` is not the")
	fmt.Fprintln(w, "hub's (a deprecated name of `--cluster-server`).")
	fmt.Fprintln(w)
	writeFlagTable(w, conn, nil)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		writeCommand(w, c, conn)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	// The groups in the order of the top-level help: a person's verbs first.
	for _, g := range root.Groups() {
		for _, c := range root.Commands() {
			if c.GroupID == g.ID {
				walk(c)
			}
		}
	}
	for _, c := range root.Commands() {
		if c.GroupID == "" {
			walk(c)
		}
	}
}

// writeCommand writes one command's section: what it does, its usage, examples and flags.
func writeCommand(w io.Writer, c *cobra.Command, conn *pflag.FlagSet) {
	fmt.Fprintf(w, "### %s\n\n%s.\n\n", c.CommandPath(), strings.TrimSuffix(c.Short, "."))
	fmt.Fprintf(w, "```\n%s\n```\n\n", c.UseLine())
	if c.Long != "" {
		fmt.Fprintf(w, "%s\n\n", strings.TrimSpace(c.Long))
	}
	if c.Example != "" {
		fmt.Fprintf(w, "```sh\n%s\n```\n\n", unindent(strings.TrimRight(c.Example, "\n")))
	}
	takesConnection := false
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if isConnectionFlag(f, conn) {
			takesConnection = true
		}
	})
	writeFlagTable(w, c.LocalFlags(), conn)
	if takesConnection {
		fmt.Fprintln(w, "It takes the [connection flags](#connection-flags).")
		fmt.Fprintln(w)
	}
}

// isConnectionFlag says whether f is one of kubectl's connection flags.
func isConnectionFlag(f *pflag.Flag, conn *pflag.FlagSet) bool {
	cf := conn.Lookup(f.Name)
	return cf != nil && cf.Usage == f.Usage
}

// writeFlagTable writes the visible flags of fs but the connection flags (none left out when
// conn is nil).
func writeFlagTable(w io.Writer, fs *pflag.FlagSet, conn *pflag.FlagSet) {
	var rows []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" || f.Name == "help" || conn != nil && isConnectionFlag(f, conn) {
			return
		}
		name := "`--" + f.Name + "`"
		if f.Shorthand != "" {
			name = "`-" + f.Shorthand + "`, " + name
		}
		def := f.DefValue
		switch {
		case def == "" || def == "[]" || f.Value.Type() == "bool" && def == "false":
			def = ""
		default:
			def = "`" + def + "`"
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s |", name, def, markdownCell(f.Usage)))
	})
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "| Flag | Default | Meaning |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, r := range rows {
		fmt.Fprintln(w, r)
	}
	fmt.Fprintln(w)
}

// markdownCell escapes what would break a table cell.
func markdownCell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

// unindent removes the two spaces cobra's examples start their lines with.
func unindent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "  ")
	}
	return strings.Join(lines, "\n")
}
