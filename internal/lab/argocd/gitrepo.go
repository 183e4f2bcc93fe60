package argocd

import (
	"context"
	"embed"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// AppPath is the demo application's directory in the lab's git repository.
const AppPath = "apps/db"

// appManifests is the demo application: a copy of internal/lab/deployer/testdata/app (a test
// keeps them equal), because a package can embed only files below its own directory.
//
//go:embed app/*.yaml
var appManifests embed.FS

// repoDirs are the bare repository Argo CD reads and the work tree the lab commits from.
func repoDirs(dir string) (bare, work string) {
	return filepath.Join(dir, "git", "apps.git"), filepath.Join(dir, "git", "work")
}

// RepoURL is the file:// URL of the git repository of the instance in dir.
func RepoURL(dir string) string {
	bare, _ := repoDirs(dir)
	return "file://" + bare
}

// ensureRepo creates the bare repository with the demo application committed on main, once.
func ensureRepo(ctx context.Context, dir string) error {
	bare, work := repoDirs(dir)
	if _, err := os.Stat(filepath.Join(bare, "refs", "heads", "main")); err == nil {
		return nil
	}
	_ = os.RemoveAll(bare)
	_ = os.RemoveAll(work)
	if err := git(ctx, "", "init", "--quiet", "--bare", "--initial-branch=main", bare); err != nil {
		return err
	}
	if err := git(ctx, "", "clone", "--quiet", bare, work); err != nil {
		return err
	}
	entries, err := appManifests.ReadDir("app")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(work, AppPath), 0o750); err != nil {
		return fmt.Errorf("failed to create %s: %w", AppPath, err)
	}
	for _, e := range entries {
		raw, err := appManifests.ReadFile(path.Join("app", e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(work, AppPath, e.Name()), raw, 0o600); err != nil {
			return fmt.Errorf("failed to write %s: %w", e.Name(), err)
		}
	}
	for _, args := range [][]string{
		{"checkout", "--quiet", "-B", "main"},
		{"add", "."},
		{"commit", "--quiet", "-m", "The lab's demo application"},
		{"push", "--quiet", "origin", "main"},
	} {
		if err := git(ctx, work, args...); err != nil {
			return err
		}
	}
	return nil
}

// git runs git in dir with a fixed identity and no user or system configuration.
func git(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=drover lab", "GIT_AUTHOR_EMAIL=lab@drover.invalid",
		"GIT_COMMITTER_NAME=drover lab", "GIT_COMMITTER_EMAIL=lab@drover.invalid")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("failed to run git %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}
