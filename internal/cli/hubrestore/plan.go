package hubrestore

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/hub/hubrecord"
	"github.com/drover-io/drover/internal/join"
	"github.com/drover-io/drover/internal/objectstore"
)

// plan is what the restore gives the hub.
type plan struct {
	// joins are the answering clusters, joined in this order.
	joins []joinPlan
	// skipped say which clusters were not read, and why.
	skipped []string
	// notes say what is not restored, and why.
	notes    []string
	policies []*v1alpha1.DRPolicy
	drpcs    []drpcPlan
}

// joinPlan is a cluster to join: its DRCluster's fields and its own S3 profile.
type joinPlan struct {
	name, region string
	profile      objectstore.Profile
	conn         join.Cluster
	// revoke is true when the hub holds no kubeconfig for the cluster: the Secret the old
	// hub's tokens are bound to is deleted before the join.
	revoke bool
}

// drpcPlan is a DRPlacementControl to create, and the state its groups are in.
type drpcPlan struct {
	drpc  *v1alpha1.DRPlacementControl
	state hubrecord.State
	// marked is true when a group of it was promoted without the hub: an existing
	// DRPlacementControl is then given the spec that adopts it (docs/decisions/0014).
	marked bool
}

// newPlan builds the plan from the clusters read.
func newPlan(clusters []*cluster) (*plan, error) {
	p := &plan{}
	byName := map[string]*cluster{}
	for _, c := range clusters {
		byName[c.name] = c
		if c.err != nil {
			p.skipped = append(p.skipped, fmt.Sprintf("%s: %v", c.name, c.err))
			continue
		}
		if c.unrecorded > 0 {
			p.notes = append(p.notes, fmt.Sprintf("%s holds %d VolumeReplicationGroup(s) with no record of the hub (%s): their applications are not restored; protect them again",
				c.name, c.unrecorded, hubrecord.Annotation))
		}
	}
	apps := applications(clusters)
	for _, c := range clusters {
		if c.err != nil {
			continue
		}
		j, err := joinFor(c, apps)
		if err != nil {
			return nil, err
		}
		p.joins = append(p.joins, j)
	}
	policies := map[string]*v1alpha1.DRPolicy{}
	for _, key := range slices.SortedFunc(maps.Keys(apps), func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) }) {
		app := apps[key]
		newest := app.newest()
		if _, ok := policies[newest.record.Policy.Name]; !ok {
			policies[newest.record.Policy.Name] = policyFrom(newest)
		}
		p.drpcs = append(p.drpcs, drpcFor(app, byName))
	}
	for _, name := range slices.Sorted(maps.Keys(policies)) {
		p.policies = append(p.policies, policies[name])
	}
	return p, nil
}

// application is one DRPlacementControl's groups, by cluster.
type application map[string]group

// newest is the group whose record is the newest: the highest DRPlacementControl generation,
// then the cluster's name for a stable choice.
func (a application) newest() group {
	var out group
	for _, name := range slices.Sorted(maps.Keys(a)) {
		if g := a[name]; out.record == nil || g.record.DRPC.Generation > out.record.DRPC.Generation {
			out = g
		}
	}
	return out
}

// applications gathers the groups of the clusters read by DRPlacementControl.
func applications(clusters []*cluster) map[types.NamespacedName]application {
	out := map[types.NamespacedName]application{}
	for _, c := range clusters {
		for _, g := range c.groups {
			key := types.NamespacedName{Namespace: g.record.DRPC.Namespace, Name: g.record.DRPC.Name}
			if out[key] == nil {
				out[key] = application{}
			}
			out[key][c.name] = g
		}
	}
	return out
}

// joinFor is a cluster's join: its region and profile as recorded (the newest record naming
// it), its profile's Secret as it holds it (so that its store keys are kept).
func joinFor(c *cluster, apps map[types.NamespacedName]application) (joinPlan, error) {
	j := joinPlan{name: c.name, region: c.name, conn: c.conn}
	profile := join.DefaultS3ProfileName(c.name)
	var gen int64 = -1
	for _, app := range apps {
		for _, g := range app {
			if rc, ok := g.record.Cluster(c.name); ok && g.record.DRPC.Generation > gen {
				gen, j.region, profile = g.record.DRPC.Generation, rc.Region, rc.S3ProfileName
			}
		}
	}
	p, ok := c.profiles[profile]
	if !ok {
		return j, fmt.Errorf("%s holds no Secret of its S3 profile %s (labelled %s=%s in %s): join it with drover cluster join, then run the restore again",
			c.name, profile, join.LabelS3Profile, profile, join.DefaultNamespace)
	}
	j.profile = p
	return j, nil
}

// policyFrom is the DRPolicy of a group: its name and clusters recorded, the rest from the
// group's spec, which is what the agents act on.
func policyFrom(g group) *v1alpha1.DRPolicy {
	s := g.vrg.Spec
	spec := v1alpha1.DRPolicySpec{
		DRClusters: slices.Clone(g.record.Policy.DRClusters), SchedulingInterval: s.SchedulingInterval,
		StorageClassBackends: slices.Clone(s.StorageClassBackends), S3Profiles: slices.Clone(s.S3Profiles),
	}
	if s.VolRep != nil && s.VolRep.ReplicationClassSelector != nil {
		spec.ReplicationClassSelector = s.VolRep.ReplicationClassSelector.DeepCopy()
	}
	if v := s.VolSync; v != nil {
		spec.VolSyncMovers, spec.VolSyncAddress = v.Movers, v.Address
		if v.VolumeSnapshotClassSelector != nil {
			spec.VolumeSnapshotClassSelector = v.VolumeSnapshotClassSelector.DeepCopy()
		}
	}
	return &v1alpha1.DRPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "DRPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: g.record.Policy.Name},
		Spec:       spec,
	}
}

// drpcFor is an application's DRPlacementControl: the newest record's spec, its action set
// from the state its groups are in. A cluster of its policy that was not read counts as not
// answering: the state is never guessed.
func drpcFor(app application, byName map[string]*cluster) drpcPlan {
	newest := app.newest()
	var groups []hubrecord.Group
	marked := false
	for _, name := range newest.record.Policy.DRClusters {
		g := hubrecord.Group{Cluster: name}
		switch c := byName[name]; {
		case c == nil:
			g.Err = fmt.Errorf("no --cluster-kubeconfig given for it")
		case c.err != nil:
			g.Err = c.err
		default:
			g.VRG = app[name].vrg
		}
		if m, err := v1alpha1.PromotedWithoutHubMark(g.VRG); m != nil && err == nil {
			marked = true
		}
		groups = append(groups, g)
	}
	state := hubrecord.Rebuild(groups)
	d := &v1alpha1.DRPlacementControl{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "DRPlacementControl"},
		ObjectMeta: metav1.ObjectMeta{Namespace: newest.record.DRPC.Namespace, Name: newest.record.DRPC.Name},
		Spec:       hubrecord.Placement(newest.record.DRPC.Spec, state),
	}
	return drpcPlan{drpc: d, state: state, marked: marked}
}
