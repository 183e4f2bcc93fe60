package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/drover-io/drover/internal/modroot"
)

const (
	// DirEnv names a directory of the upstream CRDs, looked in first.
	DirEnv = "DROVER_UPSTREAM_APIS"
	// RequireEnv names the variable that, set to 1, makes the absence of the upstream CRDs a
	// failure of the tests that need them instead of a skip (MaySkip). CI sets it.
	RequireEnv = "DROVER_REQUIRE_UPSTREAM_APIS"
	// FetchCommand downloads the upstream CRDs into the checkout's cache.
	FetchCommand = "make upstream-apis"
)

// ErrNotFound is the error of Find when no location holds every upstream CRD file.
var ErrNotFound = errors.New("no upstream CRDs")

// MismatchError is a file whose sha256 is not the one the manifest pins.
type MismatchError struct {
	// File is the file's name; Where is the directory or address it was read from.
	File, Where string
	Got, Want   string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("%s (%s) has sha256 %s, but %s pins %s: it is not the upstream file drover is tested against",
		e.File, e.Where, e.Got, ManifestPath, e.Want)
}

// CacheDir is where `make upstream-apis` puts the files in the checkout at root (git ignores it).
func CacheDir(root string) string { return filepath.Join(root, ".cache", "upstream-apis") }

// SharedDir is the copy beside the checkout at root that the team's machines and CI have.
func SharedDir(root string) string {
	return filepath.Join(filepath.Dir(root), "shared", "upstream-apis")
}

// Locations are where the upstream CRDs of the checkout at root are looked for, in order:
// $DROVER_UPSTREAM_APIS when set, the checkout's cache, the shared copy beside the checkout.
func Locations(root string) []string {
	var out []string
	if dir := os.Getenv(DirEnv); dir != "" {
		out = append(out, dir)
	}
	return append(out, CacheDir(root), SharedDir(root))
}

// Check reports which of the sources' files dir lacks. A file present with another sum is a
// *MismatchError.
func Check(dir string, sources []Source) (missing []string, err error) {
	for _, s := range sources {
		sum, err := fileSHA256(filepath.Join(dir, s.File))
		if errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, s.File)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("failed to read upstream CRD %s: %w", filepath.Join(dir, s.File), err)
		}
		if sum != s.SHA256 {
			return nil, &MismatchError{File: s.File, Where: dir, Got: sum, Want: s.SHA256}
		}
	}
	return missing, nil
}

// Find returns the first of locations that holds every source's file with its sum. A file
// with another sum is an error right away, never passed over; when none holds them all, the
// error wraps ErrNotFound and says what each location lacks and how to fetch them.
func Find(locations []string, sources []Source) (string, error) {
	why := make([]string, 0, len(locations))
	for _, dir := range locations {
		missing, err := Check(dir, sources)
		if err != nil {
			return "", err
		}
		switch {
		case len(missing) == 0:
			return dir, nil
		case !isDir(dir):
			why = append(why, dir+" (no such directory)")
		case len(missing) == len(sources):
			why = append(why, dir+" (none of its files)")
		default:
			why = append(why, fmt.Sprintf("%s (%d of %d files missing, such as %s)", dir, len(missing), len(sources), missing[0]))
		}
	}
	return "", fmt.Errorf("%w in %s: run `%s` to download them, or set %s to a directory holding them",
		ErrNotFound, strings.Join(why, ", "), FetchCommand, DirEnv)
}

// Dir finds the upstream CRDs of the checkout around the working directory (Locations).
func Dir() (string, error) {
	root, err := modroot.Find()
	if err != nil {
		return "", fmt.Errorf("failed to find drover's checkout: %w", err)
	}
	sources, err := Sources()
	if err != nil {
		return "", err
	}
	return Find(Locations(root), sources)
}

// Required says whether RequireEnv asks for the upstream CRDs (1, true).
func Required() bool {
	required, _ := strconv.ParseBool(os.Getenv(RequireEnv))
	return required
}

// MaySkip says whether a test that needs the upstream CRDs may skip on err from Dir: err says
// only that no location holds them, and RequireEnv does not require them.
func MaySkip(err error) bool { return errors.Is(err, ErrNotFound) && !Required() }

// T is the part of testing.TB that Require uses.
type T interface {
	Helper()
	Skip(args ...any)
	Fatal(args ...any)
}

// Require ends a test that needs the upstream CRDs when err, from Dir, is not nil: it skips
// with err's one line (what to run) when MaySkip, else it fails.
func Require(t T, err error) {
	t.Helper()
	switch {
	case err == nil:
	case MaySkip(err):
		t.Skip(err)
	case errors.Is(err, ErrNotFound):
		t.Fatal(RequireEnv + " is set, so the upstream CRDs are required: " + err.Error())
	default:
		t.Fatal(err)
	}
}

// isDir says whether dir is a directory.
func isDir(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir()
}

// fileSHA256 returns the hex sha256 of the file at name.
func fileSHA256(name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
