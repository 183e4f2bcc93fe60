package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/story"
)

// DefaultKillEvery is the mean time between two kills.
const DefaultKillEvery = 30 * time.Second

// Options configure a soak.
type Options struct {
	// Lab is a running lab with drover (lab.Options.RunDrover); Env the story's view of it.
	Lab *lab.Lab
	Env story.Env
	// Case is the application; its Namespace must be free. Home is where it starts.
	Case story.Case
	Home string
	// Cycles is the number of cycles, at least 1.
	Cycles int
	// KeepGoing goes on after a failed cycle from wherever the application settles; without it
	// the soak stops at the first failed cycle.
	KeepGoing bool
	// KillEvery is the mean time between kills (exponentially distributed); 0 kills nothing.
	KillEvery time.Duration
	// Seed seeds the kills' times and targets, so a run's schedule can be replayed.
	Seed uint64
	// Targets are the clusters whose drover process may be killed (lab.Hub for the hub, a
	// managed cluster for its agent); empty means all three. MaxKills, when not zero, ends the
	// kills after that many.
	Targets  []string
	MaxKills int
	// Out receives the story's progress, each cycle's table and the cycle lines; nil discards.
	Out io.Writer
}

// Cycle is one cycle's outcome.
type Cycle struct {
	// N counts from 1.
	N     int
	Steps []story.Step
	// Kills are those made while the cycle ran.
	Kills    []Kill
	Duration time.Duration
	// Err is why the cycle failed: its first failed step, two writable primaries, or a killed
	// process the lab kubelet did not restart.
	Err error
}

// soak is a run in progress.
type soak struct {
	o   Options
	run *story.Run
	k   *killer
	rep *Report
}

// Run protects the application, runs the cycles and returns the report; the error is the first
// failed cycle's (or, with KeepGoing, every failed cycle's) and the watcher's verdict.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Lab == nil || o.Env.Hub == nil || o.Cycles < 1 || o.Home == "" {
		return nil, errors.New("the soak needs a running lab with drover, its clients, a home cluster and at least one cycle")
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if len(o.Targets) == 0 {
		o.Targets = []string{lab.Hub, lab.East, lab.West}
	}
	s := &soak{o: o, rep: &Report{Case: o.Case, Seed: o.Seed, KillEvery: o.KillEvery, Cycles: o.Cycles, LogsDir: o.Lab.Dir()}}
	s.k = newKiller(o)
	env := o.Env
	env.StopCluster, env.StartCluster = s.k.guardStop(env.StopCluster), s.k.guardStart(env.StartCluster)
	s.run = story.New(env, o.Case, o.Home)
	s.k.onRestart = s.run.DroverRestarted
	began := time.Now()
	err := s.protectAndCycle(ctx)
	s.rep.Overlap = s.run.Overlap()
	s.rep.Kills = s.k.counts()
	s.rep.Duration = time.Since(began)
	return s.rep, err
}

// protectAndCycle starts the application, protects it once and runs the cycles with the killer
// beside them; it closes the story (the watcher's verdict) at the end.
func (s *soak) protectAndCycle(ctx context.Context) (err error) {
	if err := s.run.Start(ctx); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.run.Close()) }()
	s.rep.Protect = s.run.Protect(ctx)
	if s.rep.Protect.Err != nil {
		return fmt.Errorf("protect: %w", s.rep.Protect.Err)
	}
	kctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { s.k.loop(kctx) })
	defer func() { stop(); wg.Wait() }()
	at := s.o.Home
	var errs []error
	for n := 1; n <= s.o.Cycles; n++ {
		c := s.cycle(ctx, n, at)
		s.rep.Ran = append(s.rep.Ran, c)
		fmt.Fprintln(s.o.Out)
		story.PrintTableOf(s.o.Out, c.Steps, s.o.Case.Unit())
		fmt.Fprintln(s.o.Out, s.rep.cycleLine(c))
		if c.Err == nil {
			continue
		}
		errs = append(errs, fmt.Errorf("cycle %d: %w", n, c.Err))
		if !s.o.KeepGoing {
			break
		}
		if at, err = s.heal(ctx); err != nil {
			errs = append(errs, fmt.Errorf("after cycle %d the application did not settle, so the soak cannot go on: %w", n, err))
			break
		}
	}
	return errors.Join(errs...)
}

// cycle runs cycle n from at, where the application runs, to its peer and back: an odd cycle
// fails over with at stopped, recovers at and relocates back; an even one relocates to the
// peer, fails back over with the peer stopped and recovers the peer. Two cycles cover both
// directions of both actions, and each ends where it began.
func (s *soak) cycle(ctx context.Context, n int, at string) Cycle {
	peer := lab.East
	if at == lab.East {
		peer = lab.West
	}
	steps := []func() story.Step{
		func() story.Step { return s.run.Failover(ctx, at) },
		func() story.Step { return s.run.Recover(ctx, at) },
		func() story.Step { return s.run.Relocate(ctx, peer) },
	}
	if n%2 == 0 {
		steps = []func() story.Step{
			func() story.Step { return s.run.Relocate(ctx, at) },
			func() story.Step { return s.run.Failover(ctx, peer) },
			func() story.Step { return s.run.Recover(ctx, peer) },
		}
	}
	fmt.Fprintf(s.o.Out, "\n== cycle %d of %d (the application on %s)\n", n, s.o.Cycles, at)
	c := Cycle{N: n}
	first, violations := len(s.run.Steps), len(s.run.Violations())
	s.k.setCycle(n)
	began := time.Now()
	for _, run := range steps {
		if c.Err = run().Failure(); c.Err != nil {
			break
		}
	}
	c.Duration = time.Since(began)
	c.Steps = slices.Clone(s.run.Steps[first:])
	var errs []error
	if c.Err != nil {
		errs = append(errs, c.Err)
	}
	if v := s.run.Violations(); len(v) > violations {
		errs = append(errs, fmt.Errorf("two writable primaries: %s", strings.Join(v[violations:], "; ")))
	}
	kills, killErrs := s.k.takeCycle()
	c.Kills = kills
	c.Err = errors.Join(append(errs, killErrs...)...)
	return c
}

// heal, after a failed cycle, starts every cluster the cycle left stopped (the story's recover
// step; its verdict belongs to no cycle) and waits until the application settles, and returns
// where it runs: the next cycle starts there.
func (s *soak) heal(ctx context.Context) (string, error) {
	fmt.Fprintln(s.o.Out, "== healing after the failed cycle: starting the stopped clusters, waiting for the application to settle")
	for _, cluster := range s.k.stopped() {
		s.run.Recover(ctx, cluster)
	}
	return s.run.Settle(ctx)
}
