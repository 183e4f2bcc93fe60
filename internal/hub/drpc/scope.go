package drpc

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	ocmv1beta1 "github.com/drover-io/drover/internal/extapi/ocm/v1beta1"
)

// scope is the state of one reconcile of one DRPlacementControl. Nothing in it outlives the
// request.
type scope struct {
	drpc   *v1alpha1.DRPlacementControl
	before *v1alpha1.DRPlacementControl
	now    time.Time

	// policy is the DRPlacementControl's DRPolicy; interval its schedulingInterval, parsed.
	policy   *v1alpha1.DRPolicy
	interval time.Duration
	// argoNames are the names a GitOps tool knows the policy's clusters by, by DRCluster name.
	argoNames map[string]string
	// drclusters are the policy's DRClusters' specs, by name, for the record the groups carry
	// (record.go).
	drclusters map[string]v1alpha1.DRClusterSpec
	// lost are the policy's clusters declared lost, with the reason given.
	lost map[string]string
	// leftBehind are the policy's clusters whose DRCluster still lists a group of this name
	// to remove (left there by an earlier DRPlacementControl of this name): this one does
	// not touch that cluster until the hub has removed it.
	leftBehind map[string]bool
	// clusters are the policy's two clusters as this reconcile observed them, by name.
	clusters map[string]*clusterView

	// decision is the application's PlacementDecision (placement mode); nil before it exists.
	decision *ocmv1beta1.PlacementDecision
	// placement is the OCM Placement the DRPlacementControl steers (placement mode); nil when
	// the hub has none (a GitOps tool reading the decisions without OCM).
	placement *ocmv1beta1.Placement

	// refusal, when set, is why the action the spec asks for is refused or postponed
	// (ActionAccepted False).
	refusal *refusal
	// waiting says what the current step waits for, for the conditions' messages.
	waiting string
	// recipeObserved is true once observeRecipe ran: recipe and decisionTo are then what the
	// groups are handed (recipe.go).
	recipeObserved bool
	// recipe is the DRRecipe's copy the groups are handed, namespaces filled in, without the
	// action's key and decisions; nil when the DRPlacementControl names none.
	recipe *v1alpha1.VRGRecipe
	// decisionTo are the clusters spec.hookDecision is handed to: those where it answers a
	// failed run of the action in force (hooks.go); decisionKey is that action's key.
	decisionTo  map[string]bool
	decisionKey string
	// decisionIgnored says why spec.hookDecision is handed to no cluster; empty when it is
	// handed, or there is none.
	decisionIgnored string
	// invalid is true when the spec cannot be acted on (Validated False); nothing is done.
	invalid bool
}

// refusal is a reason and a message for ActionAccepted False.
type refusal struct{ reason, message string }

// clusterView is one managed cluster as this reconcile observed it.
type clusterView struct {
	name string
	// client is nil when the gateway could not build one.
	client client.Client
	// err is why the cluster could not be read; nil when it was.
	err error
	// vrg is the application's VolumeReplicationGroup there; nil when there is none (or the
	// cluster could not be read).
	vrg *v1alpha1.VolumeReplicationGroup
}

// reachable reports whether the cluster answered this reconcile.
func (c *clusterView) reachable() bool { return c != nil && c.err == nil }

func newScope(drpc *v1alpha1.DRPlacementControl, now time.Time) *scope {
	return &scope{drpc: drpc, before: drpc.DeepCopy(), now: now, clusters: map[string]*clusterView{}}
}

// peer returns the policy's other cluster.
func (sc *scope) peer(cluster string) string {
	p, _ := sc.policy.Spec.Peer(cluster)
	return p
}

// view returns the observation of a cluster; an empty name gives nil.
func (sc *scope) view(cluster string) *clusterView { return sc.clusters[cluster] }

// placementMode reports whether a GitOps tool deploys the application (placementRef).
func (sc *scope) placementMode() bool { return sc.drpc.Spec.PlacementRef != nil }
