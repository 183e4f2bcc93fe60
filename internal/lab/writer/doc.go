// Package writer is the lab's workload writer: a loop that commits a checksummed,
// sequence-numbered record (internal/lab/records) to each of a pod's volumes every interval, as
// a database commits, so that scenarios can prove which writes a failover kept. It runs in two
// places with this one implementation: as `drover lab writer`, a process inside the pod that
// writes into its mounted PVCs (Dirs), and as a goroutine of the lab storage controller that
// writes into the images of pods on fake nodes (internal/lab/storage, writer.go).
//
// Decisions:
//   - Writer id: <namespace>.<pod>.<first 8 characters of the pod UID> (ID). A pod recreated on
//     the peer after a failover (a StatefulSet keeps the name) writes a new log, so every log
//     has exactly one writing process and two copies that both hold record n of a log hold the
//     same record: comparing copies compares sequence numbers, and after a failover the old
//     log shows exactly what the peer lost.
//   - A write is records.Commit: the record, then the index beside the log. The process writer
//     fsyncs both (a record it counts as written is one it synced, as a database acknowledges
//     a commit it flushed); the storage controller's goroutine does not, its copies being taken
//     under the same lock as its writes.
//   - Several volumes are twins (records' dependent records): record n goes to the first, then
//     to the second, and so on; the first takes n+1 only once every other holds n. A volume
//     that is behind (a restart between the two commits of a record, a failed write) first
//     catches up from the volume before it. So on the volumes at any instant B ≤ A ≤ B + 1.
//   - Sequence: a volume's next record is its log's last valid record plus one, read from the
//     log whenever writing (re)starts: at start (a restarted writer continues its logs), and
//     after a rejected or failed write (a resync may have replaced the log with the peer's copy
//     meanwhile). While writes succeed it is kept in memory.
//   - Counters go to a status file (Status), rewritten at most every StatusInterval and once
//     more when the writer stops (running: false). A status whose updatedAt is old belongs to a
//     writer that was killed.
package writer
