package hubrecord_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/hub/hubrecord"
)

// group builds a group asked state after action, settled at its generation unless pending.
func group(state v1alpha1.ReplicationState, action v1alpha1.DRAction, pending bool) *v1alpha1.VolumeReplicationGroup {
	v := &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db", Generation: 3}}
	v.Spec.ReplicationState, v.Spec.Action = state, action
	v.Status.ObservedGeneration, v.Status.State = 3, v1alpha1.StateSecondary
	if state == v1alpha1.ReplicationStatePrimary {
		v.Status.State = v1alpha1.StatePrimary
	}
	if pending {
		v.Status.ObservedGeneration = 2
	}
	return v
}

// marked is a group promoted without the hub at at (docs/decisions/0014).
func marked(at time.Time) *v1alpha1.VolumeReplicationGroup {
	v := group(v1alpha1.ReplicationStatePrimary, v1alpha1.ActionFailover, false)
	raw, _ := json.Marshal(v1alpha1.PromotedWithoutHub{Cluster: "west", Generation: v.Generation, At: metav1.NewTime(at)})
	v.Annotations = map[string]string{v1alpha1.AnnotationPromotedWithoutHub: string(raw)}
	return v
}

func TestRebuildTellsTheStateFromTheGroupsAndNeverGuesses(t *testing.T) {
	at := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	secondary := func(final string) *v1alpha1.VolumeReplicationGroup {
		v := group(v1alpha1.ReplicationStateSecondary, v1alpha1.ActionRelocate, false)
		v.Spec.FinalSyncRequest = final
		return v
	}
	down := errors.New("connection refused")
	cases := []struct {
		name    string
		east    *v1alpha1.VolumeReplicationGroup
		eastErr error
		west    *v1alpha1.VolumeReplicationGroup
		phase   v1alpha1.DRPCPhase
		primary string
		start   *time.Time
		wait    bool
		none    bool
	}{
		{name: "a deployed application is Deployed where its group is primary", east: group(v1alpha1.ReplicationStatePrimary, "", false),
			west: group(v1alpha1.ReplicationStateSecondary, "", false), phase: v1alpha1.PhaseDeployed, primary: "east"},
		{name: "a group primary after a failover is FailedOver there", east: group(v1alpha1.ReplicationStateSecondary, v1alpha1.ActionFailover, false),
			west: group(v1alpha1.ReplicationStatePrimary, v1alpha1.ActionFailover, false), phase: v1alpha1.PhaseFailedOver, primary: "west"},
		{name: "a failover not settled yet is FailingOver, for the machine to finish", west: group(v1alpha1.ReplicationStatePrimary, v1alpha1.ActionFailover, true),
			eastErr: down, phase: v1alpha1.PhaseFailingOver, primary: "west"},
		{name: "a relocation keeps its start from the peer's final sync request", east: group(v1alpha1.ReplicationStatePrimary, v1alpha1.ActionRelocate, false),
			west: secondary("relocate-east-1796634000"), phase: v1alpha1.PhaseRelocated, primary: "east", start: ptr(time.Unix(1796634000, 0))},
		{name: "a relocation not completed waits", east: group(v1alpha1.ReplicationStatePrimary, v1alpha1.ActionRelocate, true), west: secondary("x"), wait: true},
		{name: "a group promoted without the hub, east lost, is the hub's failover to finish", eastErr: down, west: marked(at),
			phase: v1alpha1.PhaseFailingOver, primary: "west", start: &at},
		{name: "a returning old primary and a marked group: the marked one is the truth", east: group(v1alpha1.ReplicationStatePrimary, "", false),
			west: marked(at), phase: v1alpha1.PhaseFailingOver, primary: "west", start: &at},
		{name: "two primaries with no mark wait for a person", east: group(v1alpha1.ReplicationStatePrimary, "", false),
			west: group(v1alpha1.ReplicationStatePrimary, v1alpha1.ActionFailover, false), wait: true},
		{name: "a secondary whose peer does not answer waits: the primary may be there", eastErr: down, west: group(v1alpha1.ReplicationStateSecondary, "", false), wait: true},
		{name: "two secondaries wait", east: secondary(""), west: secondary(""), wait: true},
		{name: "no group and both answering is nothing to rebuild", none: true},
		{name: "no group and one silent waits", eastErr: down, wait: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := hubrecord.Rebuild([]hubrecord.Group{{Cluster: "east", VRG: c.east, Err: c.eastErr}, {Cluster: "west", VRG: c.west}})
			if (s.Wait != "") != c.wait || s.None != c.none || s.Phase != c.phase || s.Primary != c.primary {
				t.Fatalf("got %+v; want phase %q primary %q wait %v none %v", s, c.phase, c.primary, c.wait, c.none)
			}
			switch {
			case c.start == nil && s.ActionStart != nil:
				t.Fatalf("got action start %s, want none", s.ActionStart)
			case c.start != nil && (s.ActionStart == nil || !s.ActionStart.Time.Equal(*c.start)):
				t.Fatalf("got action start %v, want %s", s.ActionStart, c.start)
			}
		})
	}
}

func ptr(t time.Time) *time.Time { return &t }

func TestPlacementAsksNoActionTheGroupsHaveNotMade(t *testing.T) {
	base := v1alpha1.DRPlacementControlSpec{PreferredCluster: "east"}
	cases := []struct {
		name   string
		spec   v1alpha1.DRPlacementControlSpec
		state  hubrecord.State
		action v1alpha1.DRAction
		pref   string
		fo     string
	}{
		{name: "FailedOver on west asks the failover to west", spec: base, state: hubrecord.State{Phase: v1alpha1.PhaseFailedOver, Primary: "west"},
			action: v1alpha1.ActionFailover, pref: "east", fo: "west"},
		{name: "a failover made without the hub asks the failover that adopts it", spec: base, state: hubrecord.State{Phase: v1alpha1.PhaseFailingOver, Primary: "west"},
			action: v1alpha1.ActionFailover, pref: "east", fo: "west"},
		{name: "Relocated on east asks the relocation to east", spec: v1alpha1.DRPlacementControlSpec{PreferredCluster: "west", Action: v1alpha1.ActionFailover, FailoverCluster: "west"},
			state: hubrecord.State{Phase: v1alpha1.PhaseRelocated, Primary: "east"}, action: v1alpha1.ActionRelocate, pref: "east", fo: "west"},
		{name: "Deployed where preferred keeps the spec", spec: base, state: hubrecord.State{Phase: v1alpha1.PhaseDeployed, Primary: "east"}, pref: "east"},
		{name: "Deployed elsewhere than a recorded failover asked prefers where it runs",
			spec:  v1alpha1.DRPlacementControlSpec{PreferredCluster: "west", Action: v1alpha1.ActionFailover, FailoverCluster: "west"},
			state: hubrecord.State{Phase: v1alpha1.PhaseDeployed, Primary: "east"}, pref: "east", fo: "west"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := hubrecord.Placement(c.spec, c.state)
			if got.Action != c.action || got.PreferredCluster != c.pref || got.FailoverCluster != c.fo {
				t.Fatalf("got action %q preferred %q failover %q; want %q %q %q", got.Action, got.PreferredCluster, got.FailoverCluster, c.action, c.pref, c.fo)
			}
		})
	}
}

func TestARecordReadsBackWhatTheHubWrote(t *testing.T) {
	drpc := &v1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db", Generation: 4},
		Spec: v1alpha1.DRPlacementControlSpec{PreferredCluster: "east", DRPolicyRef: v1alpha1.PolicyReference{Name: "p"},
			HookDecision: &v1alpha1.HookDecision{}}}
	policy := &v1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1alpha1.DRPolicySpec{DRClusters: []string{"east", "west"}}}
	r := hubrecord.New(drpc, policy, map[string]v1alpha1.DRClusterSpec{"east": {Region: "eu", S3ProfileName: "s3-east"}})
	raw, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	vrg := &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{hubrecord.Annotation: raw}}}
	got, err := hubrecord.Of(vrg)
	if err != nil || got == nil {
		t.Fatalf("Of: %v, %v", got, err)
	}
	if got.DRPC.Generation != 4 || got.DRPC.Spec.HookDecision != nil || got.Policy.Name != "p" || len(got.Clusters) != 1 {
		t.Fatalf("got %+v", got)
	}
	if c, ok := got.Cluster("east"); !ok || c.Region != "eu" || c.S3ProfileName != "s3-east" {
		t.Fatalf("east: %+v %v", c, ok)
	}
	vrg.Annotations[hubrecord.Annotation] = `{"drpc":{}}`
	if _, err := hubrecord.Of(vrg); err == nil {
		t.Fatal("a record naming no DRPlacementControl must be refused")
	}
}
