package driver

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// CopyTree copies the tree under src into dst (created) as `cp -a` does, returning the bytes
// copied: directories, regular files and symbolic links with their owners, permission bits
// (set-id and sticky bits included) and modification times, the root directory's own included.
// A storage snapshot or an rsync -a keeps them; an application such as PostgreSQL refuses a data
// directory whose owner or mode changed, and rsync's quick check compares the times. Hard links
// are copied as separate files; sockets, FIFOs and devices are skipped; extended attributes and
// ACLs are not copied. Owners are kept only when this process runs as root (an unprivileged copy
// cannot give files away). A missing src copies nothing (an empty dst).
func CopyTree(src, dst string) (int64, error) {
	return copyTree(src, dst, 0)
}

// copyTree is CopyTree sleeping pace before every file or link, to make a copy take as long as
// a real volume's.
func copyTree(src, dst string, pace time.Duration) (int64, error) {
	var total int64
	var dirs []string // relative paths, parents first: their metadata is set last, deepest first
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && path == src {
				return fs.SkipAll
			}
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			dirs = append(dirs, rel)
			return os.MkdirAll(target, 0o700)
		}
		if !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		if pace > 0 {
			time.Sleep(pace)
		}
		n, err := copyEntry(path, target, d)
		total += n
		return err
	})
	if err == nil {
		err = os.MkdirAll(dst, 0o750)
	}
	// A directory's time changes with every entry made in it, and a read-only one takes none:
	// its metadata goes on after its content.
	for _, rel := range slices.Backward(dirs) {
		if err != nil {
			break
		}
		err = copyMeta(filepath.Join(src, rel), filepath.Join(dst, rel))
	}
	if err != nil {
		return total, fmt.Errorf("failed to copy %s to %s: %w", src, dst, err)
	}
	return total, nil
}

// copyEntry copies one regular file or symbolic link with its metadata.
func copyEntry(path, target string, d fs.DirEntry) (int64, error) {
	if d.Type()&fs.ModeSymlink != 0 {
		link, err := os.Readlink(path)
		if err != nil {
			return 0, err
		}
		if err := os.Symlink(link, target); err != nil {
			return 0, err
		}
		return 0, copyMeta(path, target)
	}
	n, err := CopyFile(path, target)
	if err != nil {
		return n, err
	}
	return n, copyMeta(path, target)
}

// CopyMeta gives dst (a directory, regular file or symbolic link, never followed) the owner,
// permission bits and modification time of src, as CopyTree does.
func CopyMeta(src, dst string) error { return copyMeta(src, dst) }

func copyMeta(src, dst string) error {
	info, err := os.Lstat(src)
	if err != nil {
		return err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("no owner in the file information of %s", src)
	}
	// The owner first: a change of owner clears the set-id bits.
	if os.Geteuid() == 0 {
		if err := os.Lchown(dst, int(st.Uid), int(st.Gid)); err != nil {
			return err
		}
	}
	if info.Mode()&fs.ModeSymlink == 0 {
		if err := os.Chmod(dst, info.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
			return err
		}
	}
	ts := []unix.Timespec{unix.NsecToTimespec(st.Atim.Nano()), unix.NsecToTimespec(info.ModTime().UnixNano())}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, dst, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("failed to set the times of %s: %w", dst, err)
	}
	return nil
}

// CopyFile copies the regular file src to dst (created 0600 or truncated), returning the bytes
// copied; its metadata is CopyMeta's.
func CopyFile(src, dst string) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}
