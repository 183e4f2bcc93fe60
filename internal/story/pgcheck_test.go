package story

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/pod-security-admission/api"

	"github.com/drover-io/drover/internal/cli/drill"
	"github.com/drover-io/drover/internal/drillcheck"
	"github.com/drover-io/drover/internal/lab/kubelet"
	"github.com/drover-io/drover/internal/lab/pgsql"
)

func TestThePostgresCheckOfTheDocsIsTheStorysCheckAndEverySandboxRunsIt(t *testing.T) {
	g := NewWithT(t)
	spec, err := drill.ReadCheckJob(filepath.Join("..", "..", "docs", "examples", "drill-check-postgres.yaml"))
	g.Expect(err).NotTo(HaveOccurred(), "drover drill --check-job reads the example")
	want := PostgresCheck(pgsql.DebianBinDir).Spec
	g.Expect(equality.Semantic.DeepEqual(*spec, want)).To(BeTrue(), "the example is PostgresCheck(%s): %s", pgsql.DebianBinDir, spec)
	g.Expect(drillcheck.Problems(spec, api.LevelRestricted)).To(BeEmpty(), "a sandbox enforcing restricted runs it")
	g.Expect(spec.Template.Spec.NodeSelector).To(HaveKeyWithValue(kubelet.NodeLabel, "true"), "its process runs on the lab kubelet's node")
	g.Expect(spec.Template.Spec.Containers[0].Image).To(Equal(pgsql.ImageShell))
}

func TestThePostgresCheckCountsTheTransactionsOfItsVerdict(t *testing.T) {
	g := NewWithT(t)
	n, err := postgresCheckTransactions("From container check of pod x (exit code 0):\nPASSED PostgreSQL at db-0.db answers and pgbench's invariant holds: every sum is -4211 over 812 transactions in pgbench_history\n")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(BeEquivalentTo(812))
	_, err = postgresCheckTransactions("FAILED pgbench's invariant is broken: ...")
	g.Expect(err).To(HaveOccurred())
}

// The check's script, run as the check Job's container runs it, against a PostgreSQL of this
// machine initialised by pgbench: it passes on a database whose invariant holds, and fails with
// its figures when the server does not answer or the invariant is broken.
func TestThePostgresCheckFailsWhenTheDatabaseDoesNotAnswerOrItsInvariantIsBroken(t *testing.T) {
	g := NewWithT(t)
	pg, err := pgsql.Find()
	if err != nil {
		t.Fatalf("the check runs PostgreSQL's programs: %v", err)
	}
	ctx := context.Background()
	server := startPostgres(t, pg)
	client := func(program string, args ...string) {
		t.Helper()
		args = append([]string{"-h", server.Host, "-p", strconv.Itoa(server.Port), "-U", pgsql.User}, args...)
		out, err := exec.CommandContext(ctx, pg.Program(program), args...).CombinedOutput() //nolint:gosec // PostgreSQL's programs
		g.Expect(err).NotTo(HaveOccurred(), "%s: %s", program, out)
	}
	client("pgbench", "-i", "-q", "-s", "1", "postgres")
	client("pgbench", "-n", "-c", "2", "-t", "25", "postgres")

	code, verdict := runPostgresCheck(t, pg, server.Port)
	t.Logf("a good database: exit %d: %s", code, verdict)
	g.Expect(code).To(BeZero())
	g.Expect(postgresCheckTransactions(verdict)).To(BeEquivalentTo(50), "two clients committed 25 transactions each")

	client("psql", "-Xqc", "UPDATE pgbench_accounts SET abalance = abalance + 7 WHERE aid = 1", "postgres")
	code, verdict = runPostgresCheck(t, pg, server.Port)
	t.Logf("an account changed alone: exit %d: %s", code, verdict)
	g.Expect(code).To(Equal(1))
	g.Expect(verdict).To(And(HavePrefix("FAILED pgbench's invariant is broken: sum(pgbench_accounts.abalance) = "),
		ContainSubstring("(50 history rows)")))
	sums, err := server.Sums(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(verdict).To(ContainSubstring(fmt.Sprintf("sum(pgbench_accounts.abalance) = %d, sum(pgbench_tellers.tbalance) = %d",
		sums.Accounts, sums.Tellers)), "the figures are the database's")

	code, verdict = runPostgresCheck(t, pg, freePort(t))
	t.Logf("no server: exit %d: %s", code, verdict)
	g.Expect(code).To(Equal(1))
	g.Expect(verdict).To(And(HavePrefix("FAILED pg_isready: PostgreSQL at 127.0.0.1:"), ContainSubstring("does not answer after 2 tries")))
}

// runPostgresCheck runs the check's script with the check Job's environment, aimed at
// 127.0.0.1:port, waiting 2 s for an answer, and returns its exit code and termination message.
func runPostgresCheck(t *testing.T, pg pgsql.Install, port int) (int, string) {
	t.Helper()
	c := PostgresCheck(pg.BinDir).Spec.Template.Spec.Containers[0]
	msg := filepath.Join(t.TempDir(), "termination-log")
	cmd := exec.CommandContext(context.Background(), "/bin/sh", c.Command[1:]...) //nolint:gosec // the check's own script
	for _, e := range c.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	cmd.Env = append(cmd.Env, "PGHOST=127.0.0.1", "PGPORT="+strconv.Itoa(port), "CHECK_WAIT_SECONDS=2", "CHECK_MESSAGE_FILE="+msg)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("failed to run the check: %v", err)
	}
	written, rerr := os.ReadFile(msg) //nolint:gosec // the test's own file
	if rerr != nil {
		t.Fatalf("the check wrote no termination message (%v); its output: %s", rerr, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; last != strings.TrimSpace(string(written)) {
		t.Fatalf("the check's last line %q is not its termination message %q", last, written)
	}
	return cmd.ProcessState.ExitCode(), strings.TrimSpace(string(written))
}

// startPostgres initialises and starts a PostgreSQL server on 127.0.0.1, as PostgreSQL's user
// when the test runs as root (PostgreSQL refuses to run as root), trusting local clients; it
// stops with the test.
func startPostgres(t *testing.T, pg pgsql.Install) pgsql.Server {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgcheck")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	asPostgres := func(program string, args ...string) *exec.Cmd {
		if os.Geteuid() != 0 {
			return exec.CommandContext(context.Background(), pg.Program(program), args...) //nolint:gosec // PostgreSQL's programs
		}
		args = append([]string{fmt.Sprintf("--reuid=%d", pg.UID), fmt.Sprintf("--regid=%d", pg.GID), "--clear-groups", pg.Program(program)}, args...)
		return exec.CommandContext(context.Background(), "setpriv", args...) //nolint:gosec // PostgreSQL's programs
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(dir, int(pg.UID), int(pg.GID)); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := asPostgres("initdb", "-D", data, "--auth=trust", "--username="+pgsql.User, "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb failed: %v: %s", err, out)
	}
	server := pgsql.Server{Install: pg, Host: "127.0.0.1", Port: freePort(t)}
	cmd := asPostgres("postgres", "-D", data, "-p", strconv.Itoa(server.Port), "-k", dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("failed to start postgres: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT) // a fast shutdown
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(30 * time.Second)
	for server.Ready(context.Background()) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("postgres did not answer within 30 s: %s", log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return server
}

// freePort is a TCP port of 127.0.0.1 that nothing listened on a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
