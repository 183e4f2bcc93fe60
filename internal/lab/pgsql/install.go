package pgsql

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

const (
	// ImageServer is the image of PostgreSQL's server: the lab kubelet maps it to postgres.
	ImageServer = "lab/postgres"
	// ImageShell is the image of the PostgreSQL pods' scripts (initdb when the data directory is
	// empty, pgbench's loop): the lab kubelet maps it to /bin/sh, and the pods put BinDir first
	// on their PATH, as the PostgreSQL image's own PATH does. A shell is what a PostgreSQL
	// image's entrypoint runs; the lab kubelet runs one binary per image.
	ImageShell = "lab/postgres-sh"
	// DebianBinDir is where Debian's postgresql-15 installs PostgreSQL's programs.
	DebianBinDir = "/usr/lib/postgresql/15/bin"
	// User is the machine's user PostgreSQL runs as; PostgreSQL refuses to run as root.
	User = "postgres"
	// shell is the binary ImageShell stands for.
	shell = "/bin/sh"
)

// ErrNotInstalled says PostgreSQL is not installed on this machine.
var ErrNotInstalled = errors.New("PostgreSQL is not installed: run `make tools-postgres` (as root it installs Debian's postgresql-15 with apt-get)")

// Install is the PostgreSQL of this machine.
type Install struct {
	// BinDir holds postgres, initdb, pgbench, psql, pg_isready and pg_amcheck.
	BinDir string
	// UID and GID are the postgres user's.
	UID, GID int64
}

// Find looks PostgreSQL up: the directory `pg_config --bindir` names when it holds postgres,
// else DebianBinDir, and the postgres user. It returns ErrNotInstalled when either is missing.
// It looks once per process: the judge asks at every poll.
func Find() (Install, error) { return findOnce() }

var findOnce = sync.OnceValues(find)

func find() (Install, error) {
	dir := DebianBinDir
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil { //nolint:gosec // a fixed program
		if d := strings.TrimSpace(string(out)); isProgram(filepath.Join(d, "postgres")) {
			dir = d
		}
	}
	for _, p := range []string{"postgres", "initdb", "pgbench", "psql", "pg_isready", "pg_amcheck"} {
		if !isProgram(filepath.Join(dir, p)) {
			return Install{}, fmt.Errorf("%w (no %s in %s)", ErrNotInstalled, p, dir)
		}
	}
	u, err := user.Lookup(User)
	if err != nil {
		return Install{}, fmt.Errorf("%w (no user %s: %w)", ErrNotInstalled, User, err)
	}
	uid, err := strconv.ParseInt(u.Uid, 10, 64)
	if err != nil {
		return Install{}, fmt.Errorf("failed to read the uid of user %s: %w", User, err)
	}
	gid, err := strconv.ParseInt(u.Gid, 10, 64)
	if err != nil {
		return Install{}, fmt.Errorf("failed to read the gid of user %s: %w", User, err)
	}
	return Install{BinDir: dir, UID: uid, GID: gid}, nil
}

// Images maps the lab's PostgreSQL images to the binaries that stand for them, for the lab
// kubelet's Options.Images.
func (i Install) Images() map[string]string {
	return map[string]string{ImageServer: filepath.Join(i.BinDir, "postgres"), ImageShell: shell}
}

// Program is the path of one of PostgreSQL's programs.
func (i Install) Program(name string) string { return filepath.Join(i.BinDir, name) }

// PATH is a PATH with PostgreSQL's programs first, for the pods' environment.
func (i Install) PATH() string { return i.BinDir + ":/usr/local/bin:/usr/bin:/bin" }

func isProgram(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0
}
