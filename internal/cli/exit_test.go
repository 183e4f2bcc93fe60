package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestExitCodeOfEachClassOfError(t *testing.T) {
	base := errors.New("boom")
	cases := []struct {
		name string
		err  error
		want int
	}{
		{"none", nil, ExitOK},
		{"any other failure", base, ExitFailed},
		{"usage", Usage(base), ExitUsage},
		{"cobra's unknown command", errors.New(`unknown command "evacuate" for "drover"`), ExitUsage},
		{"refused, wrapped again", fmt.Errorf("failed to act: %w", Refused(base)), ExitRefused},
		{"timed out", TimedOut(base), ExitTimedOut},
		{"partly done", Partial(base), ExitPartial},
		{"the first code wins", Usage(Refused(base)), ExitRefused},
		{"a request with no answer", fmt.Errorf("failed to read DRPlacementControl app/db: %w",
			&url.Error{Op: "Get", URL: "https://127.0.0.1:1", Err: errors.New("connect: connection refused")}), ExitUnreachable},
		{"an API server that cannot serve", apierrors.NewServiceUnavailable("etcd is down"), ExitUnreachable},
		{"an API server that timed out", apierrors.NewTimeoutError("slow", 1), ExitUnreachable},
		{"a refusal of the API server is not unreachable", apierrors.NewForbidden(schema.GroupResource{Resource: "drplacementcontrols"}, "db", base), ExitFailed},
		{"marked unreachable", Unreachable(base), ExitUnreachable},
		{"a missing kubeconfig is not unreachable", fmt.Errorf("failed to load the hub cluster's kubeconfig: %w",
			&fs.PathError{Op: "stat", Path: "/none", Err: syscall.ENOENT}), ExitFailed},
	}
	for _, tc := range cases {
		if got := ExitCodeOf(tc.err); got != tc.want {
			t.Errorf("%s: ExitCodeOf(%v) = %d, want %d", tc.name, tc.err, got, tc.want)
		}
	}
	if got := Refused(base).Error(); got != "boom" {
		t.Errorf("a coded error reads %q, want the error it wraps", got)
	}
	if !errors.Is(TimedOut(base), base) {
		t.Error("a coded error does not unwrap to the error it wraps")
	}
}

func TestConfirmationAsksForTheNameOnATerminalAndRequiresYesWithout(t *testing.T) {
	const what = "fail over 3 applications from cluster east to west"
	cases := []struct {
		name     string
		yes      bool
		terminal bool
		typed    string
		code     int
		want     string
	}{
		{"--yes asks nothing", true, false, "", ExitOK, ""},
		{"no terminal, no --yes", false, false, "east\n", ExitUsage, "refusing to " + what + " without confirmation: stdin is not a terminal to ask on, so add --yes (-y) to confirm"},
		{"the name typed", false, true, "east\n", ExitOK, ""},
		{"the name typed with blanks and no newline", false, true, "  east ", ExitOK, ""},
		{"y typed", false, true, "y\n", ExitRefused, `not confirmed (typed "y", not "east"): nothing was changed`},
		{"nothing typed (end of input)", false, true, "", ExitRefused, `not confirmed (typed "", not "east")`},
	}
	for _, tc := range cases {
		var out bytes.Buffer
		c := &Confirmation{Yes: tc.yes, In: strings.NewReader(tc.typed), Out: &out, Terminal: func() bool { return tc.terminal }}
		err := c.Confirm(what, "east")
		if got := ExitCodeOf(err); got != tc.code {
			t.Errorf("%s: exit code %d (%v), want %d", tc.name, got, err, tc.code)
		}
		if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		asked := strings.Contains(out.String(), "This will "+what+".\nType east to confirm (anything else cancels): ")
		if wantAsked := tc.terminal && !tc.yes; asked != wantAsked {
			t.Errorf("%s: asked %v, want %v:\n%s", tc.name, asked, wantAsked, out.String())
		}
	}
	if IsTerminal(strings.NewReader("")) {
		t.Error("a strings.Reader is taken for a terminal")
	}
}
