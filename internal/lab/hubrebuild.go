package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// DroverBinary is the drover binary the lab runs, the CLI a test drives as a user would.
func (l *Lab) DroverBinary() string { return l.opts.DroverBinary }

// RebuildHub turns the hub cluster into a new, empty one, as a hub lost with its site and
// brought up again elsewhere is: it stops the hub cluster if it runs, deletes its etcd data
// (every object it held: drover's DRPolicies, DRClusters, DRPlacementControls, the join
// Secrets and drover's hub install with them), starts it (the lab's bootstrap applies the CRDs
// and the placement of drover's pods again) and installs drover's hub from the release
// manifests (or Options.Installer), waiting until its pod is Ready. It joins no managed
// cluster and creates no DRPolicy: `drover hub restore` rebuilds those from what the managed
// clusters hold. The cluster keeps its certificates, ports and administrator kubeconfig, so the
// new hub answers at the old one's address. A GitOps tool the lab runs (Options.GitOps) keeps
// its objects on the hub and loses them with it. It needs a lab that runs drover.
func (l *Lab) RebuildHub(ctx context.Context) error {
	if !l.opts.RunDrover {
		return errors.New("the lab does not run drover: only a lab brought up with drover installed rebuilds its hub")
	}
	hub, err := l.Cluster(Hub)
	if err != nil {
		return err
	}
	unlock, err := l.lock()
	if err != nil {
		return err
	}
	defer unlock()
	began := time.Now()
	if err := hub.stop(); err != nil {
		return fmt.Errorf("failed to stop cluster %s: %w", Hub, err)
	}
	if err := os.RemoveAll(hub.etcdDir()); err != nil {
		return fmt.Errorf("failed to remove the etcd data of cluster %s (%s): %w", Hub, hub.etcdDir(), err)
	}
	if err := hub.start(ctx); err != nil {
		return err
	}
	if err := hub.installRelease(ctx); err != nil {
		return fmt.Errorf("cluster %s: %w", Hub, err)
	}
	if err := hub.waitDroverReady(ctx); err != nil {
		return err
	}
	l.progress("%s: rebuilt empty with drover's hub installed from %s (%.1f s)", Hub, l.installedFrom(), time.Since(began).Seconds())
	return nil
}
