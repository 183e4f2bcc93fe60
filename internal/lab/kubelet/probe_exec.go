package kubelet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// maxExecProbeOutput bounds the output of an exec probe kept in its failure, as a kubelet keeps
// 10 KiB of it (kubernetes/kubernetes pkg/probe/exec/exec.go maxReadLength).
const maxExecProbeOutput = 10 * 1024

// execProbe runs an exec probe's command in the container, as a container runtime's ExecSync
// does: in the container's mount, PID and IPC namespaces (nsenter into those of its process),
// in its working directory (the process's), with its environment and as its user. It succeeds
// when the command exits 0 (pkg/probe/exec/exec.go); a command that outlives the probe's timeout
// is killed with everything it started and fails the probe.
func (c *container) execProbe(ctx context.Context, command []string) error {
	c.mu.Lock()
	pid, env, cred := c.pid, c.env, c.cred
	c.mu.Unlock()
	if pid == 0 {
		return errors.New("the container's process does not run")
	}
	if len(command) == 0 {
		return errors.New("the exec probe has no command")
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return fmt.Errorf("nsenter (util-linux) is missing: install it to run exec probes: %w", err)
	}
	args := []string{"--target", fmt.Sprint(pid), "--mount", "--pid", "--ipc", "--wd", "--"}
	if cred != nil {
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			return fmt.Errorf("setpriv (util-linux) is missing: install it to run exec probes as the container's user: %w", err)
		}
		args = append(args, cred.setprivArgs(setpriv)...)
	}
	args = append(args, command...)
	cmd := exec.CommandContext(ctx, nsenter, args...) //nolint:gosec // the pod's own probe command
	var out bytes.Buffer
	cmd.Env, cmd.Stdout, cmd.Stderr = env, &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	output := strings.TrimSpace(out.String())
	if len(output) > maxExecProbeOutput {
		output = output[:maxExecProbeOutput]
	}
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("command %q timed out", strings.Join(command, " "))
	case err != nil:
		return fmt.Errorf("command %q failed (%w): %s", strings.Join(command, " "), err, output)
	}
	return nil
}
