package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// Confirmation is how a destructive verb (failover --all, relocate --all, cluster unjoin) is
// confirmed: by --yes, or on a terminal by typing the name of what it acts on, as Argo CD and
// GitHub ask before deleting. A mass failover is confirmed with the name of the cluster it
// leaves, so that a person reads which cluster the command is about before every application
// on it moves; y would be typed without reading.
type Confirmation struct {
	// Yes confirms without asking (-y/--yes).
	Yes bool
	// In is where the answer is read; Out where the question is written.
	In  io.Reader
	Out io.Writer
	// Terminal says whether In is a terminal a person types on; nil means IsTerminal(In).
	Terminal func() bool
}

// IsTerminal says whether r is a terminal (an *os.File on a TTY).
func IsTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Confirm asks the person to type name to confirm what (a phrase such as "fail over the 3
// applications of cluster east"). It returns nil when confirmed: with Yes, or when the typed
// line is name. Without a terminal and without Yes it refuses as a wrong command line (a
// script must say --yes); a different answer refuses the action.
func (c *Confirmation) Confirm(what, name string) error {
	if c.Yes {
		return nil
	}
	terminal := c.Terminal
	if terminal == nil {
		terminal = func() bool { return IsTerminal(c.In) }
	}
	if c.In == nil || !terminal() {
		return Usage(fmt.Errorf("refusing to %s without confirmation: stdin is not a terminal to ask on, so add --yes (-y) to confirm; nothing was changed", what))
	}
	if _, err := fmt.Fprintf(c.Out, "\nThis will %s.\nType %s to confirm (anything else cancels): ", what, name); err != nil {
		return err
	}
	line, err := bufio.NewReader(c.In).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("failed to read the confirmation: %w", err)
	}
	if got := strings.TrimSpace(line); got != name {
		return Refused(fmt.Errorf("not confirmed (typed %q, not %q): nothing was changed", got, name))
	}
	return nil
}
