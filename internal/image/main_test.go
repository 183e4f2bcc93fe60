package image_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

const (
	testVersion = "v0.0.0-imagetest"
	testCommit  = "0123456789abcdef0123456789abcdef01234567"
)

// hostBinary is drover built for this machine's architecture exactly as `make image` builds it
// (static, -trimpath, stripped, version and commit stamped); TestMain builds it once.
var hostBinary string

// fakeBinary stands in for the other platform's binary; TestMain writes it.
var fakeBinary string

// hostPlatform is the platform whose image the tests unpack and run; otherPlatform gets a small
// fake binary, so that the index has two platforms without cross-compiling drover in make test
// (a cold arm64 build of drover takes 4-8 minutes on a 2-core machine; make image builds it).
var (
	hostPlatform  = v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	otherPlatform = v1.Platform{OS: "linux", Architecture: otherArch()}
)

func otherArch() string {
	if runtime.GOARCH == "arm64" {
		return "amd64"
	}
	return "arm64"
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "drover-image-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	hostBinary = filepath.Join(dir, "drover")
	start := time.Now()
	if err := buildDrover(hostBinary); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("built %s in %s\n", hostBinary, time.Since(start).Round(time.Millisecond))
	fakeBinary = filepath.Join(dir, "drover-fake")
	if err := os.WriteFile(fakeBinary, []byte("not a real drover binary\n"), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// buildDrover builds cmd/drover with the flags of the Makefile's image-binaries target.
func buildDrover(out string) error {
	pkg := "github.com/drover-io/drover/internal/version"
	ldflags := "-s -w -X " + pkg + ".Version=" + testVersion + " -X " + pkg + ".Commit=" + testCommit
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", out,
		"github.com/drover-io/drover/cmd/drover")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("failed to build drover for the image test: %w\n%s", err, output)
	}
	return nil
}

func openFile(path string) (io.ReadCloser, error) {
	return os.Open(path)
}
