// Package process is the lab's process runner: it starts processes detached from their starter
// (their own session, so they outlive a CLI that exits), finds them again by scanning /proc,
// stops them with SIGTERM then SIGKILL, reserves the loopback ports they listen on, and reads
// what the lab shows of a process from /proc (whether it runs, its resident memory, its CPU
// time). The lab's clusters and Prometheus (internal/lab), its Argo CD instance
// (internal/lab/argocd) and its storage's peer check (internal/lab/storage) share it.
//
//   - start.go: Command.Start (detached, logging to <log dir>/<name>.log), Stop and StopInTurn.
//   - find.go: Find, the /proc scan that survives a crashed CLI and lost pid files.
//   - ports.go: ReservePort and ReleasePorts, machine-wide reservations below the ephemeral range.
//   - procfs.go: Alive, CPU, RSS.
//   - log.go: Tail and ErrorExcerpt of a process's log.
package process
