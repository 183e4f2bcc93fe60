package replication

import (
	"context"
	"sync"

	"github.com/drover-io/drover/api/v1alpha1"
)

// Fake is a Backend for tests of the agent: it returns the Result and SyncStatus set for each
// PVC (Done and a zero SyncStatus by default) and records the PVCs it protected. It is safe for
// concurrent use.
type Fake struct {
	name v1alpha1.ReplicationBackend

	mu        sync.Mutex
	results   map[string]Result
	observed  map[string]Result
	statuses  map[string]SyncStatus
	statusErr error
	protected []string
	demoted   []string
}

var (
	_ Backend            = (*Fake)(nil)
	_ Demoter            = (*Fake)(nil)
	_ ProtectionObserver = (*Fake)(nil)
)

// NewFake returns a fake backend with the given name.
func NewFake(name v1alpha1.ReplicationBackend) *Fake {
	return &Fake{name: name, results: map[string]Result{}, observed: map[string]Result{}, statuses: map[string]SyncStatus{}}
}

// Key is how the fake names a PVC: namespace/name.
func Key(pc *PVCContext) string { return pc.PVC.Namespace + "/" + pc.PVC.Name }

// SetResult makes Protect of the PVC namespace/name return r.
func (f *Fake) SetResult(key string, r Result) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.results[key] = r
}

// SetObserved makes ObserveProtection of the PVC namespace/name return r; without it,
// ObserveProtection cannot tell.
func (f *Fake) SetObserved(key string, r Result) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.observed[key] = r
}

// SetStatus makes Status of the PVC namespace/name return s.
func (f *Fake) SetStatus(key string, s SyncStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statuses[key] = s
}

// SetStatusError makes every Status call fail with err (nil heals it).
func (f *Fake) SetStatusError(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statusErr = err
}

// Protected returns the keys of the PVCs Protect was called for, in call order.
func (f *Fake) Protected() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.protected...)
}

// Name returns the fake's backend name.
func (f *Fake) Name() v1alpha1.ReplicationBackend { return f.name }

// Protect records the call and returns the PVC's Result.
func (f *Fake) Protect(_ context.Context, pc *PVCContext) Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := Key(pc)
	f.protected = append(f.protected, key)
	if r, ok := f.results[key]; ok {
		return r
	}
	return Done()
}

// ObserveProtection returns the Result set by SetObserved, if any.
func (f *Fake) ObserveProtection(_ context.Context, pc *PVCContext) (Result, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.observed[Key(pc)]
	return r, ok
}

// Status returns the PVC's SyncStatus.
func (f *Fake) Status(_ context.Context, pc *PVCContext) (SyncStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.statusErr != nil {
		return SyncStatus{}, f.statusErr
	}
	return f.statuses[Key(pc)], nil
}

// Demoted returns the keys of the PVCs Demote was called for, in call order, each followed by
// "+resync" when resync was asked.
func (f *Fake) Demoted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.demoted...)
}

// Demote records the call and returns Done.
func (f *Fake) Demote(_ context.Context, pc *PVCContext, resync bool) Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := Key(pc)
	if resync {
		key += "+resync"
	}
	f.demoted = append(f.demoted, key)
	return Done()
}
