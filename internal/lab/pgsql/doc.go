// Package pgsql is PostgreSQL in the lab: it finds the PostgreSQL installed on this machine
// (install.go), names the images the lab kubelet maps to its programs, and judges a database the
// lab runs from outside, as a client does (server.go: readiness, pgbench's invariant,
// pg_amcheck, the transactions each pgbench run committed), and pgbench's own logs of what it
// committed (pgbenchlog.go).
//
// PostgreSQL is a package of the machine (Debian's postgresql-15: postgres, initdb, pgbench,
// psql, pg_isready, pg_amcheck under /usr/lib/postgresql/15/bin), installed by
// hack/build-tools.sh when missing. The lab's pods run it as the machine's postgres user, whose
// uid and gid this package looks up: initdb and the client programs need a user name for their
// uid, which an image would carry in its /etc/passwd.
//
// The lab's pods tag every history row pgbench inserts with the id of the pgbench run that
// inserted it (the run's start in nanoseconds since the epoch, RunScript), and each run logs
// every transaction it committed to a file of its own named by that id (-l --log-prefix). So a
// judge counts, run by run, what the source committed and what the target holds.
//
// Production code never imports this package; the lab and the story do.
package pgsql
