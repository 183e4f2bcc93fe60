package hubrestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/hub/hubrecord"
	"github.com/drover-io/drover/internal/join"
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

func TestAClusterThatDoesNotAnswerIsDeclaredLostFromTheRecordsAndNotGuessed(t *testing.T) {
	east := &cluster{name: "east", err: errors.New("connection refused"), silent: true}
	west := &cluster{name: "west", profiles: profiles("store-west"),
		groups: []group{recorded(t, v1alpha1.ReplicationStateSecondary, "", 4)}}
	p, err := newPlan([]*cluster{east, west})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.joins) != 1 || p.joins[0].name != "west" || len(p.skipped) != 0 || len(p.lost) != 1 {
		t.Fatalf("joins %+v skipped %v lost %+v", p.joins, p.skipped, p.lost)
	}
	drc := p.lost[0].drc
	if drc.Name != "east" || drc.Spec.Region != "eu-east" || drc.Spec.S3ProfileName != "s3-east" ||
		drc.Spec.KubeconfigSecretRef != (v1alpha1.SecretRef{Namespace: join.DefaultNamespace, Name: join.KubeconfigSecretName("east")}) ||
		drc.Labels[join.LabelManagedBy] != join.ManagedByValue || drc.Labels[join.LabelCluster] != "east" {
		t.Fatalf("the DRCluster declared lost is not the records' (with join's labels and Secret name): %+v", drc)
	}
	if drc.Spec.Lost == nil || !strings.Contains(drc.Spec.Lost.Reason, "did not answer when drover hub restore rebuilt this hub") ||
		!strings.Contains(drc.Spec.Lost.Reason, "run drover hub restore again") || !strings.Contains(drc.Spec.Lost.Reason, "not joined without that step") {
		t.Fatalf("spec.lost: %+v", drc.Spec.Lost)
	}
	if got := describeLost(p.lost[0]); !strings.Contains(got, "created declared lost from the records (region eu-east, S3 profile s3-east)") {
		t.Fatalf("describeLost: %s", got)
	}
	p.lost[0].existing = drc
	if got := describeLost(p.lost[0]); !strings.Contains(got, "the hub holds its DRCluster, declared lost: kept as it is") {
		t.Fatalf("describeLost, a second run: %s", got)
	}
	if len(p.policies) != 1 || len(p.drpcs) != 1 {
		t.Fatalf("the policy and the application are restored: %+v %+v", p.policies, p.drpcs)
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

	// An answer that refuses, or a kubeconfig that reaches another cluster, is no silence:
	// nothing is declared; nor for a cluster no record names.
	p, err = newPlan([]*cluster{{name: "east", err: errors.New("reaches the cluster whose agent calls itself north")}, west})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.lost) != 0 || len(p.skipped) != 1 || !strings.Contains(p.skipped[0], "east: reaches") {
		t.Fatalf("lost %+v skipped %v", p.lost, p.skipped)
	}
	p, err = newPlan([]*cluster{{name: "north", err: errors.New("connection refused"), silent: true}, west})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.lost) != 0 || len(p.skipped) != 1 {
		t.Fatalf("a silent cluster no record names: lost %+v skipped %v", p.lost, p.skipped)
	}
	if len(p.notes) != 1 || !strings.Contains(p.notes[0], "the records name cluster east, for which no --cluster-kubeconfig was given: it is neither joined nor declared lost") {
		t.Fatalf("notes: %v", p.notes)
	}
}

func TestNoAnswerIsOnlyARequestTheServerNeverAnswered(t *testing.T) {
	for _, tc := range []struct {
		err    error
		silent bool
	}{
		{nil, false},
		{&url.Error{Op: "Get", URL: "https://east:6443", Err: errors.New("connect: connection refused")}, true},
		{fmt.Errorf("failed to read ConfigMap: %w", context.DeadlineExceeded), true},
		{fmt.Errorf("failed to read ConfigMap: %w", apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "drover-agent", errors.New("no"))), false},
		{apierrors.NewServiceUnavailable("etcd is down"), false},
	} {
		if got := noAnswer(tc.err); got != tc.silent {
			t.Errorf("noAnswer(%v) = %t, want %t", tc.err, got, tc.silent)
		}
	}
}

func TestAClusterWithoutItsProfileSecretIsRefusedBeforeAnyWrite(t *testing.T) {
	west := &cluster{name: "west", profiles: profiles("s3-east"), groups: []group{recorded(t, v1alpha1.ReplicationStatePrimary, "", 4)}}
	_, err := newPlan([]*cluster{west})
	if err == nil || !strings.Contains(err.Error(), "west holds no Secret of its S3 profile store-west") {
		t.Fatalf("got %v", err)
	}
}

func TestADRPlacementControlTheHubHoldsIsKeptAndSaidSo(t *testing.T) {
	g := recorded(t, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionFailover, 4)
	raw, _ := json.Marshal(v1alpha1.PromotedWithoutHub{Cluster: "west", Generation: g.vrg.Generation, At: metav1.NewTime(time.Now())})
	g.vrg.Annotations[v1alpha1.AnnotationPromotedWithoutHub] = string(raw)
	west := &cluster{name: "west", profiles: profiles("store-west"), groups: []group{g}}
	p, err := newPlan([]*cluster{{name: "east", err: errors.New("connection refused"), silent: true}, west})
	if err != nil {
		t.Fatal(err)
	}
	d := p.drpcs[0]
	d.existing = &v1alpha1.DRPlacementControl{Spec: v1alpha1.DRPlacementControlSpec{PreferredCluster: "east"}}
	d.existing.Status.Phase, d.existing.Status.CurrentPrimary = v1alpha1.PhaseDeployed, "east"
	if got := describeDRPC(d); !strings.Contains(got, "exists on the hub (Deployed on east): kept") || !strings.Contains(got, "asked for the failover to west") {
		t.Fatalf("a hub's DRPlacementControl older than a promotion made without it: %s", got)
	}
	d.existing.Spec.Action, d.existing.Spec.FailoverCluster = v1alpha1.ActionFailover, "west"
	d.existing.Status.Phase, d.existing.Status.CurrentPrimary = v1alpha1.PhaseFailedOver, "west"
	if got := describeDRPC(d); got != "exists on the hub (FailedOver on west): kept, the hub goes on from its status" {
		t.Fatalf("a hub's DRPlacementControl that adopted it: %s", got)
	}
}
