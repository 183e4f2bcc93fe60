package upstream

import (
	"context"
	"errors"
	"fmt"
)

// EnsureOptions say what `make upstream-apis` and `make test` ask of Ensure.
type EnsureOptions struct {
	FetchOptions
	// Root is the checkout: the cache is CacheDir(Root).
	Root string
	// IfMissing downloads nothing when a location (Locations) already holds the files.
	IfMissing bool
	// UnavailableOK makes a download that fails for want of an answer (no network, a server
	// error) a warning on Log: the tests that need the files then skip. A file with another
	// sum is an error all the same, and so is any failure while RequireEnv requires the files
	// (Required): CI then stops at once instead of after the whole suite.
	UnavailableOK bool
}

// Ensure downloads the upstream CRDs into the checkout's cache (Fetch), or, with IfMissing,
// only when no location holds them. It logs where the files are.
func Ensure(ctx context.Context, opts EnsureOptions, sources []Source) error {
	opts.FetchOptions = opts.withDefaults()
	if opts.IfMissing {
		dir, err := Find(Locations(opts.Root), sources)
		if err == nil {
			fmt.Fprintf(opts.Log, "The upstream CRDs are in %s\n", dir)
			return nil
		}
		if !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	cache := CacheDir(opts.Root)
	err := Fetch(ctx, opts.FetchOptions, cache, sources)
	if err == nil {
		fmt.Fprintf(opts.Log, "The upstream CRDs are in %s (%d files, sha256 checked)\n", cache, len(sources))
		return nil
	}
	if _, mismatch := errors.AsType[*MismatchError](err); mismatch {
		return err
	}
	if !opts.UnavailableOK || Required() {
		why := ""
		if Required() {
			why = fmt.Sprintf(" (%s is set: they are required)", RequireEnv)
		}
		return fmt.Errorf("%w\nthe upstream CRDs could not be downloaded%s: check the network (or HTTPS_PROXY), or set %s to a directory that holds them",
			err, why, DirEnv)
	}
	fmt.Fprintf(opts.Log, "warning: %v\nwarning: the tests that compare with the upstream CRDs will skip; run `%s` when the repositories are reachable\n",
		err, FetchCommand)
	return nil
}
