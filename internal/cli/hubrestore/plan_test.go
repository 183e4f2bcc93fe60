package hubrestore

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/hub/hubrecord"
	"github.com/drover-io/drover/internal/objectstore"
)

// recorded builds a group of app/db on a cluster as the hub leaves it: its spec from the policy,
// its record of generation gen.
func recorded(t *testing.T, state v1alpha1.ReplicationState, action v1alpha1.DRAction, gen int64) group {
	t.Helper()
	drpc := &v1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db", Generation: gen},
		Spec: v1alpha1.DRPlacementControlSpec{DRPolicyRef: v1alpha1.PolicyReference{Name: "pair"}, PreferredCluster: "east",
			PVCSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}
	policy := &v1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Name: "pair"}, Spec: v1alpha1.DRPolicySpec{DRClusters: []string{"east", "west"}}}
	r := hubrecord.New(drpc, policy, map[string]v1alpha1.DRClusterSpec{
		"east": {Region: "eu-east", S3ProfileName: "s3-east"}, "west": {Region: "eu-west", S3ProfileName: "store-west"}})
	raw, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	v := &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db", Generation: 2,
		Annotations: map[string]string{hubrecord.Annotation: raw}}}
	v.Spec = v1alpha1.VolumeReplicationGroupSpec{ReplicationState: state, Action: action, SchedulingInterval: "30s",
		StorageClassBackends: []v1alpha1.StorageClassBackend{{StorageClassName: "block", Backend: v1alpha1.BackendVolRep}},
		S3Profiles:           []v1alpha1.S3Profile{{Name: "s3-east"}, {Name: "store-west"}},
		VolSync:              &v1alpha1.VolSyncSpec{Movers: v1alpha1.VolSyncMoversPrivileged}}
	v.Status.ObservedGeneration, v.Status.State = 2, v1alpha1.StateSecondary
	if state == v1alpha1.ReplicationStatePrimary {
		v.Status.State = v1alpha1.StatePrimary
	}
	back, err := hubrecord.Of(v)
	if err != nil {
		t.Fatal(err)
	}
	return group{vrg: v, record: back}
}

func profiles(names ...string) map[string]objectstore.Profile {
	out := map[string]objectstore.Profile{}
	for _, n := range names {
		out[n] = objectstore.Profile{Name: n, Endpoint: "https://s3", Bucket: "b"}
	}
	return out
}

func TestThePlanRebuildsThePolicyFromTheGroupsAndTheActionFromTheirState(t *testing.T) {
	east := &cluster{name: "east", profiles: profiles("s3-east", "store-west"),
		groups: []group{recorded(t, v1alpha1.ReplicationStateSecondary, v1alpha1.ActionFailover, 5)}, unrecorded: 1}
	west := &cluster{name: "west", profiles: profiles("s3-east", "store-west"),
		groups: []group{recorded(t, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionFailover, 4)}}
	p, err := newPlan([]*cluster{east, west})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.joins) != 2 || p.joins[1].region != "eu-west" || p.joins[1].profile.Name != "store-west" {
		t.Fatalf("joins: %+v", p.joins)
	}
	if len(p.policies) != 1 {
		t.Fatalf("policies: %+v", p.policies)
	}
	pol := p.policies[0].Spec
	if pol.SchedulingInterval != "30s" || pol.VolSyncMovers != v1alpha1.VolSyncMoversPrivileged || len(pol.S3Profiles) != 2 || pol.DRClusters[1] != "west" {
		t.Fatalf("policy spec: %+v", pol)
	}
	if len(p.drpcs) != 1 {
		t.Fatalf("drpcs: %+v", p.drpcs)
	}
	d := p.drpcs[0]
	if d.state.Phase != v1alpha1.PhaseFailedOver || d.state.Primary != "west" || d.drpc.Spec.Action != v1alpha1.ActionFailover || d.drpc.Spec.FailoverCluster != "west" {
		t.Fatalf("drpc: state %+v spec %+v", d.state, d.drpc.Spec)
	}
	if len(p.notes) != 1 || !strings.Contains(p.notes[0], "east holds 1 VolumeReplicationGroup(s) with no record") {
		t.Fatalf("notes: %v", p.notes)
	}
}

func TestAClusterThatDoesNotAnswerIsSkippedAndNotGuessed(t *testing.T) {
	east := &cluster{name: "east", err: errors.New("connection refused")}
	west := &cluster{name: "west", profiles: profiles("store-west"),
		groups: []group{recorded(t, v1alpha1.ReplicationStateSecondary, "", 4)}}
	p, err := newPlan([]*cluster{east, west})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.joins) != 1 || p.joins[0].name != "west" || len(p.skipped) != 1 {
		t.Fatalf("joins %+v skipped %v", p.joins, p.skipped)
	}
	if d := p.drpcs[0]; d.state.Wait == "" || !strings.Contains(d.state.Wait, "east does not answer") {
		t.Fatalf("a secondary whose peer is silent must wait, got %+v", d.state)
	}

	// Promoted without the hub on west, east silent: the failover the hub finishes.
	g := recorded(t, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionFailover, 4)
	raw, _ := json.Marshal(v1alpha1.PromotedWithoutHub{Cluster: "west", Generation: g.vrg.Generation, At: metav1.NewTime(time.Now())})
	g.vrg.Annotations[v1alpha1.AnnotationPromotedWithoutHub] = string(raw)
	west.groups = []group{g}
	p, err = newPlan([]*cluster{east, west})
	if err != nil {
		t.Fatal(err)
	}
	if d := p.drpcs[0]; !d.marked || d.state.Phase != v1alpha1.PhaseFailingOver || d.drpc.Spec.FailoverCluster != "west" {
		t.Fatalf("got %+v %+v", d.state, d.drpc.Spec)
	}
	if got := describeState(p.drpcs[0]); !strings.Contains(got, "promoted without the hub on west") {
		t.Fatalf("describeState: %s", got)
	}
}

func TestAClusterWithoutItsProfileSecretIsRefusedBeforeAnyWrite(t *testing.T) {
	west := &cluster{name: "west", profiles: profiles("s3-east"), groups: []group{recorded(t, v1alpha1.ReplicationStatePrimary, "", 4)}}
	_, err := newPlan([]*cluster{west})
	if err == nil || !strings.Contains(err.Error(), "west holds no Secret of its S3 profile store-west") {
		t.Fatalf("got %v", err)
	}
}
