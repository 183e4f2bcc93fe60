//go:build linux

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-io/drover/internal/exercise/soak"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/story"
)

func TestSoakFlagsChooseTheCaseTheKillsAndTheSeed(t *testing.T) {
	defaults := func() soakFlags {
		return soakFlags{cycles: 3, workload: string(story.StatefulSetKeepsPVCs), policy: lab.PolicyVolRep,
			mode: string(story.SelfContained), restarts: true, killEvery: soak.DefaultKillEvery.String(), seed: 42}
	}
	t.Run("the defaults are the e2e suite's seed case, kills every 30 s on average, the seed given", func(t *testing.T) {
		s := defaults()
		o, err := s.options(true)
		if err != nil {
			t.Fatal(err)
		}
		if o.Case.Name() != "sts-retain/lab-volrep/self-contained" || o.Case.StorageClass != lab.BlockStorageClass {
			t.Errorf("case %s with class %s", o.Case.Name(), o.Case.StorageClass)
		}
		if o.KillEvery != 30*time.Second || o.Seed != 42 || o.Cycles != 3 || o.Home != lab.East {
			t.Errorf("options %+v", o)
		}
	})
	t.Run("restarts off kills nothing and a seed not given comes from the clock", func(t *testing.T) {
		s := defaults()
		s.restarts, s.policy = false, lab.PolicyVolSync
		o, err := s.options(false)
		if err != nil {
			t.Fatal(err)
		}
		if o.KillEvery != 0 || o.Seed == 42 || o.Seed == 0 || o.Case.StorageClass != lab.FileStorageClass {
			t.Errorf("options %+v", o)
		}
	})
	for _, tc := range []struct {
		name, want string
		change     func(*soakFlags)
	}{
		{"no cycle", "--cycles 0", func(s *soakFlags) { s.cycles = 0 }},
		{"an unknown workload", `workload "sts"`, func(s *soakFlags) { s.workload = "sts" }},
		{"an unknown policy", `policy "volrep"`, func(s *soakFlags) { s.policy = "volrep" }},
		{"an unknown mode", `mode "gitops"`, func(s *soakFlags) { s.mode = "gitops" }},
		{"a kill interval that is no duration", `--kill-every "often"`, func(s *soakFlags) { s.killEvery = "often" }},
	} {
		t.Run(tc.name+" is refused with what to give", func(t *testing.T) {
			s := defaults()
			tc.change(&s)
			_, err := s.options(true)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to name %s", err, tc.want)
			}
		})
	}
}
