package process

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Command is a process to start.
type Command struct {
	// Name identifies the process in its log file's name (<log dir>/<Name>.log).
	Name string
	// Binary is the absolute path of the executable.
	Binary string
	Args   []string
	// Env is added to this process's environment; it carries what must not show on a command
	// line.
	Env []string
}

// Start launches c detached from the caller (its own session), so it outlives a CLI that exits.
// Output goes to logDir/<Name>.log, after a line that records the command. When tieToParent is
// set (tests), the process is killed if the starting process dies.
func (c Command) Start(logDir string, tieToParent bool) (int, error) {
	logPath := filepath.Join(logDir, c.Name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, fmt.Errorf("failed to open log %s: %w", logPath, err)
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "\n==== %s starting %s %s\n", time.Now().Format(time.RFC3339), c.Binary, strings.Join(c.Args, " "))
	cmd := exec.Command(c.Binary, c.Args...) //nolint:gosec // the lab runs binaries it built itself
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if len(c.Env) > 0 {
		cmd.Env = append(os.Environ(), c.Env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if tieToParent {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("failed to start %s: %w", c.Name, err)
	}
	// Reap the child when it exits so it never lingers as a zombie in a long-running parent.
	go func() { _ = cmd.Wait() }()
	return cmd.Process.Pid, nil
}

// Stop sends SIGTERM to every process at once, waits up to grace for them to exit and kills
// what is left.
func Stop(procs []Proc, grace time.Duration) {
	for _, p := range procs {
		_ = syscall.Kill(p.PID, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !anyAlive(procs) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, p := range procs {
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
	}
	for i := 0; i < 100 && anyAlive(procs); i++ {
		time.Sleep(20 * time.Millisecond)
	}
}

// StopInTurn stops the processes one after the other, in the order given, each as Stop does:
// the next one gets SIGTERM only once the previous one is gone.
func StopInTurn(procs []Proc, grace time.Duration) {
	for _, p := range procs {
		Stop([]Proc{p}, grace)
	}
}

func anyAlive(procs []Proc) bool {
	for _, p := range procs {
		if Alive(p.PID) {
			return true
		}
	}
	return false
}
