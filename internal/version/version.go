// Package version holds the version and commit drover was built from. Both are set at link time:
//
//	go build -ldflags "-X github.com/drover-io/drover/internal/version.Version=v0.1.0 \
//	  -X github.com/drover-io/drover/internal/version.Commit=$(git rev-parse HEAD)" ./cmd/drover
//
// `make build` and `make image` set them from git; a plain `go build` leaves the defaults.
package version

import (
	"fmt"
	"io"
	"runtime"
)

// Version is drover's release version, "dev" when not set at link time.
var Version = "dev"

// Commit is the git commit drover was built from, "unknown" when not set at link time.
var Commit = "unknown"

// MaxPublished is the longest version the hub and the agents record in a status
// (status.hubVersion, status.agentVersion): the API's bound on those fields.
const MaxPublished = 64

// Published is Version as the hub and the agents record it in the status they write, cut to
// MaxPublished bytes: an overlong link-time value must not make their status patches fail.
func Published() string {
	if len(Version) > MaxPublished {
		return Version[:MaxPublished]
	}
	return Version
}

// Print writes the version, the commit, the Go version and the platform, one per line.
func Print(w io.Writer) error {
	_, err := fmt.Fprintf(w, "version: %s\ncommit: %s\ngo: %s\nplatform: %s/%s\n",
		Version, Commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return err
}
