// Package freeze stops the processes that use a directory and resumes them, so that the lab's
// storage copies a volume at one instant: the state a power loss at that instant would leave,
// except that what the processes wrote and did not sync is kept (the page cache is not lost).
// Real storage gives the same crash-consistent point per volume (an RBD mirror snapshot, a CSI
// snapshot); a copy made file by file while the application writes does not.
//
// Freeze(dir) finds the users of dir by scanning /proc (scan.go):
//
//   - a process whose mount namespace (other than the caller's) has dir, or a directory inside
//     it, mounted: its /proc/<pid>/mountinfo shows a mount of the same file system (major:minor)
//     whose root is dir's path on that file system, or lies under it. This is how a pod of the
//     lab kubelet holds its volumes: bind mounted into its own mount namespace. Every process of
//     that namespace is a user, the whole pod.
//   - in any namespace, a process whose working directory, root directory or an open file
//     (/proc/<pid>/cwd, root, fd) lies in dir.
//
// It stops each with SIGSTOP and waits until every thread of each shows state T in
// /proc/<pid>/task/<tid>/stat; a write under way when the signal came completes first. Then it
// scans again, for processes forked just before their parent stopped (reading only processes it
// has not examined), until a scan finds no one new. The thaw sends SIGCONT. Holds are counted per
// process (freeze.go, Freezer): a process found by two freezes at once (a pod with two volumes,
// each copied) resumes at the last thaw; a process that was stopped already (a debugger, job
// control) is left stopped. The caller and its ancestors are never stopped. Processes are named by
// PID and start time, so a thaw never signals a process that reused a PID. The counts are per
// freezing process: a process stopped by another cluster's storage controller is "stopped already"
// to this one, which leaves it to the other to resume; should the other thaw first, the process
// runs during the rest of this copy. The lab's pods use the volumes of one cluster only.
//
// Why signals and not the cgroup freezer: the freezer stops a cgroup, and the lab kubelet gives a
// pod no cgroup of its own (its processes share the lab's), so freezing one would stop the lab
// too. Signals leave gaps a cgroup freezer has not: a process that enters the pod's namespace
// after the last scan runs during the copy; asynchronous I/O (io_uring, AIO) already submitted
// may complete while the process is stopped; a parent waiting with WUNTRACED sees the stop. A
// process that holds the directory only by a memory mapping of a file in it (/proc/<pid>/maps),
// or a pod that mounts a directory above it, is not found. The lab's workloads (its writer,
// PostgreSQL 15) write their data with plain write calls through their volumes' mounts.
//
// The lab storage's copies take the freeze (internal/lab/storage/driver, CopyVolume); drover
// itself never imports this package.
package freeze
