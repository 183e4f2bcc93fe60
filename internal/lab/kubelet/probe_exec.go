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
	var out bytes.Buffer
	cmd, err := c.execCommand(ctx, command)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = &out, &out
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

// execCommand is command run in the container as a container runtime's exec runs it: in the
// mount, PID and IPC namespaces of the container's process (nsenter), in its working directory,
// with its environment and as its user. Ending ctx kills the command and everything it started.
func (c *container) execCommand(ctx context.Context, command []string) (*exec.Cmd, error) {
	c.mu.Lock()
	pid, env, cred := c.pid, c.env, c.cred
	c.mu.Unlock()
	if pid == 0 {
		return nil, errors.New("the container's process does not run")
	}
	if len(command) == 0 {
		return nil, errors.New("no command to run")
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return nil, fmt.Errorf("nsenter (util-linux) is missing: install it to exec in containers: %w", err)
	}
	args := []string{"--target", fmt.Sprint(pid), "--mount", "--pid", "--ipc", "--wd", "--"}
	if cred != nil {
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			return nil, fmt.Errorf("setpriv (util-linux) is missing: install it to exec as the container's user: %w", err)
		}
		args = append(args, cred.setprivArgs(setpriv)...)
	}
	args = append(args, command...)
	cmd := exec.CommandContext(ctx, nsenter, args...) //nolint:gosec // the pod's own command
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	return cmd, nil
}
