package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/drover-io/drover/internal/lab"
)

// restartTimeout bounds the wait for the lab kubelet to restart a killed process; its back-off
// is at most 30 s.
const restartTimeout = 2 * time.Minute

// Kill is one killed drover process.
type Kill struct {
	// Cycle is the cycle during which it was killed; Component is "hub" or "agent/<cluster>".
	Cycle     int
	Component string
	PID       int
	At        time.Time
	// Restarted is how long the lab kubelet took to run it again; zero when its cluster was
	// stopped before it came back (nothing to wait for then).
	Restarted time.Duration
}

// Component names the drover process of a lab cluster: the hub's, or the cluster's agent.
func Component(cluster string) string {
	if cluster == lab.Hub {
		return "hub"
	}
	return "agent/" + cluster
}

// killer kills drover processes of clusters that are up at random times. It owns the clusters'
// stop and start for the story, so that a kill never races a cluster being stopped.
type killer struct {
	o   Options
	rng *rand.Rand

	mu    sync.Mutex
	down  map[string]bool
	cycle int
	kills []Kill
	errs  []error
	// taken counts the kills and errors handed to cycles already.
	takenKills, takenErrs int
	// onRestart, when set, hears of each killed process that runs again (the story's watcher,
	// whose grace after a return a restart extends); it is called without mu held.
	onRestart func(killed, running time.Time)
}

func newKiller(o Options) *killer {
	return &killer{o: o, rng: rand.New(rand.NewPCG(o.Seed, o.Seed^0x5eed)), down: map[string]bool{}} //nolint:gosec // a replayable schedule, not a secret
}

// guardStop marks the cluster down before it stops it, so no kill picks its processes after.
func (k *killer) guardStop(stop func(string) error) func(string) error {
	return func(cluster string) error {
		k.mu.Lock()
		k.down[cluster] = true
		k.mu.Unlock()
		return stop(cluster)
	}
}

// guardStart marks the cluster up once it started.
func (k *killer) guardStart(start func(context.Context, string) error) func(context.Context, string) error {
	return func(ctx context.Context, cluster string) error {
		if err := start(ctx, cluster); err != nil {
			return err
		}
		k.mu.Lock()
		delete(k.down, cluster)
		k.mu.Unlock()
		return nil
	}
}

// stopped returns the clusters that are down.
func (k *killer) stopped() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for c := range k.down {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

func (k *killer) setCycle(n int) {
	k.mu.Lock()
	k.cycle = n
	k.mu.Unlock()
}

// takeCycle returns the kills and errors since its last call: those of the cycle that ends.
func (k *killer) takeCycle() ([]Kill, []error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	kills, errs := slices.Clone(k.kills[k.takenKills:]), slices.Clone(k.errs[k.takenErrs:])
	k.takenKills, k.takenErrs = len(k.kills), len(k.errs)
	return kills, errs
}

// counts returns the kills per component, every target listed.
func (k *killer) counts() map[string]int {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string]int{}
	for _, t := range k.o.Targets {
		out[Component(t)] = 0
	}
	for _, kill := range k.kills {
		out[kill.Component]++
	}
	return out
}

// loop kills a process after each exponentially distributed wait until ctx ends or MaxKills.
func (k *killer) loop(ctx context.Context) {
	if k.o.KillEvery <= 0 {
		return
	}
	for n := 0; k.o.MaxKills == 0 || n < k.o.MaxKills; {
		wait := time.Duration(k.rng.ExpFloat64() * float64(k.o.KillEvery))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		kill, ok, err := k.killOne(ctx)
		if err != nil {
			k.fail(err)
		}
		if !ok {
			continue
		}
		n++
		k.awaitRestart(ctx, kill)
	}
}

// killOne sends SIGKILL to one running drover process of a cluster that is up, chosen at random
// among the targets; ok is false when none runs.
func (k *killer) killOne(ctx context.Context) (Kill, bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	st, err := k.o.Lab.DroverStatus(ctx)
	if err != nil {
		return Kill{}, false, nil //nolint:nilerr // no status now: try at the next time
	}
	var alive []lab.DroverProcess
	for _, p := range st.Processes {
		if p.Running && p.PID > 0 && !k.down[p.Cluster] && slices.Contains(k.o.Targets, p.Cluster) {
			alive = append(alive, p)
		}
	}
	if len(alive) == 0 {
		return Kill{}, false, nil
	}
	p := alive[k.rng.IntN(len(alive))]
	kill := Kill{Cycle: k.cycle, Component: Component(p.Cluster), PID: p.PID, At: time.Now()}
	switch err := syscall.Kill(p.PID, syscall.SIGKILL); {
	case errors.Is(err, syscall.ESRCH):
		return kill, false, nil // it exited on its own since the status: the kubelet restarts it
	case err != nil:
		return kill, false, fmt.Errorf("failed to kill %s (pid %d): %w", kill.Component, p.PID, err)
	}
	k.kills = append(k.kills, kill)
	fmt.Fprintf(k.o.Out, "[%s] kill: SIGKILL to the %s (pid %d)\n", kill.At.UTC().Format(time.TimeOnly), kill.Component, p.PID)
	return kill, true, nil
}

// awaitRestart waits until the lab kubelet runs the killed component again (a new PID), unless
// its cluster is stopped meanwhile, and records how long it took or that it did not.
func (k *killer) awaitRestart(ctx context.Context, kill Kill) {
	cluster := clusterOf(kill.Component)
	deadline := time.Now().Add(restartTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
		k.mu.Lock()
		down := k.down[cluster]
		k.mu.Unlock()
		if down {
			return
		}
		st, err := k.o.Lab.DroverStatus(ctx)
		if err != nil {
			continue
		}
		for _, p := range st.Processes {
			if p.Cluster == cluster && p.Running && p.PID != kill.PID {
				k.restarted(kill, time.Since(kill.At))
				if k.onRestart != nil {
					k.onRestart(kill.At, time.Now())
				}
				return
			}
		}
	}
	k.fail(fmt.Errorf("the lab kubelet did not restart the %s within %s of its kill (pid %d)", kill.Component, restartTimeout, kill.PID))
}

func (k *killer) restarted(kill Kill, d time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i := range k.kills {
		if k.kills[i].PID == kill.PID && k.kills[i].At.Equal(kill.At) {
			k.kills[i].Restarted = d
		}
	}
	fmt.Fprintf(k.o.Out, "[%s] kill: the %s runs again after %s\n", time.Now().UTC().Format(time.TimeOnly), kill.Component, d.Round(100*time.Millisecond))
}

func (k *killer) fail(err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.errs = append(k.errs, err)
	fmt.Fprintf(k.o.Out, "[%s] kill: %v\n", time.Now().UTC().Format(time.TimeOnly), err)
}

// clusterOf is the cluster of a component.
func clusterOf(component string) string {
	if component == "hub" {
		return lab.Hub
	}
	c, _ := strings.CutPrefix(component, "agent/")
	return c
}
