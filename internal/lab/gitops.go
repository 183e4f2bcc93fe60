package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/drover-io/drover/internal/lab/argocd"
)

// GitOpsArgoCD is the Options.GitOps value that runs a real Argo CD in placement mode.
const GitOpsArgoCD = "argocd"

// argoCDDir is where the lab's Argo CD keeps its state.
func (l *Lab) argoCDDir() string { return filepath.Join(l.opts.Dir, "argocd") }

// validGitOps checks Options.GitOps.
func validGitOps(gitops string) error {
	switch gitops {
	case "", GitOpsArgoCD:
		return nil
	}
	return fmt.Errorf("the lab does not know the GitOps tool %q; it runs %q", gitops, GitOpsArgoCD)
}

// startGitOps starts the GitOps tool Options.GitOps asks for, once the clusters are up: Argo CD
// with its objects on the hub and a cluster Secret for each managed cluster, named as the
// cluster. It is idempotent.
func (l *Lab) startGitOps(ctx context.Context) error {
	if l.opts.GitOps != GitOpsArgoCD {
		return nil
	}
	hub, err := l.Cluster(Hub)
	if err != nil {
		return err
	}
	clusters := map[string]argocd.ClusterAccess{}
	for _, c := range l.clusters {
		if c.Role != RoleManaged {
			continue
		}
		if clusters[c.Name], err = argocd.AccessFromKubeconfig(c.KubeconfigPath()); err != nil {
			return err
		}
	}
	began := time.Now()
	if _, err := argocd.Start(ctx, argocd.Options{
		Dir: l.argoCDDir(), BinDir: l.opts.BinDir, HubKubeconfig: hub.KubeconfigPath(), Clusters: clusters,
		Progress: l.opts.Progress, TieToParent: l.opts.TieToParent,
	}); err != nil {
		return fmt.Errorf("failed to start Argo CD: %w", err)
	}
	l.progress("argocd: up (%.1f s); git repository %s", time.Since(began).Seconds(), argocd.RepoURL(l.argoCDDir()))
	return nil
}

// stopGitOps stops the lab's Argo CD, if it ever ran, whatever Options.GitOps says.
func (l *Lab) stopGitOps() error {
	inst, err := argocd.Open(l.argoCDDir())
	if err != nil {
		return nil //nolint:nilerr // no Argo CD ever ran in this lab
	}
	return inst.Stop()
}

// ArgoCDStatus reports the lab's Argo CD; ok is false when none ever ran in this lab.
func (l *Lab) ArgoCDStatus() (st argocd.Status, ok bool, err error) {
	if _, err := os.Stat(l.argoCDDir()); errors.Is(err, os.ErrNotExist) {
		return argocd.Status{}, false, nil
	}
	inst, err := argocd.Open(l.argoCDDir())
	if err != nil {
		return argocd.Status{}, false, nil //nolint:nilerr // its directory exists but it never started
	}
	st, err = inst.Status()
	return st, err == nil, err
}
