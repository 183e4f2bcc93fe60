package kubelet

import (
	"os/exec"
	"runtime"
	"sync"
)

// Pdeathsig is sent when the thread that forked a child exits, not the process: Go may end an
// OS thread (one whose goroutine locked it and returned), which would kill the containers of a
// kubelet that still runs. All processes are therefore started from one goroutine that keeps
// its thread locked for the life of the process.
var (
	spawnOnce sync.Once
	spawnCh   chan spawnRequest
)

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// start starts cmd from the spawner thread.
func start(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for req := range spawnCh {
				req.done <- req.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawnCh <- spawnRequest{cmd: cmd, done: done}
	return <-done
}
