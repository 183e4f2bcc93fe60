package vrg

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/objectstore"
	"github.com/drover-io/drover/internal/replication"
)

// scope is the state of one reconcile of one VolumeReplicationGroup. Nothing in it outlives the
// request.
type scope struct {
	vrg *v1alpha1.VolumeReplicationGroup
	// before is the group as read, the base of the status patch.
	before *v1alpha1.VolumeReplicationGroup

	// specProblem, when set, says why the spec cannot be acted on; stop ends the phases.
	specProblem string
	// specReason is the reason of the conditions that report specProblem; empty is InvalidSpec.
	specReason string
	stop       bool
	// interval is spec.schedulingInterval, parsed.
	interval time.Duration

	// pvcs are the selected PVCs, sorted by namespace and name; pvcsListed is false when they
	// could not be listed, and then the status is left as it was.
	pvcs       []*pvcState
	pvcsListed bool
	// stores are the outcome of writing the metadata to each S3 profile, in spec order; nil
	// until the metadata phase ran.
	stores []storeOutcome
	// metadataPending names PVCs whose metadata cannot be written yet (not bound).
	metadataPending []string
	// keptOnly are the metadata keys under the own claim kept but not written this pass
	// (claimkeys.go: copied along when the marker moves to the own claim).
	keptOnly []string
	// metadataObjects counts the objects written to every store.
	metadataObjects int
	// floorWaiting names what the namespace floor of a promotion still waits for (a quota to be
	// counted, an object that could not be made): the restore is not complete while any.
	floorWaiting []string
	// restore is what the restore of a promotion observed; nil when the group is not promoting
	// (a primary without action, or a secondary).
	restore *restoreState
	// metadataDeferred is true when the metadata was not written because the restore is not
	// complete: the stores keep the peer's metadata, the source of the restore.
	metadataDeferred bool
	// fenced is true once the API server enforces the fence on the group's PVCs (a relocation
	// demotes only then); finalSync, when set, is the final sync this pass proved.
	fenced    bool
	finalSync *v1alpha1.FinalSyncStatus
	// finalSyncPending names the PVs whose final sync from a DR-owned PVC is not finished
	// (volsync_finalsync.go); finishRelocation records no final sync while any.
	finalSyncPending []string
	// epoch is what the store fence decided (epoch.go); nil on a secondary. A stale primary
	// writes nothing to any store.
	epoch *epochState
	// kubeObjectsReady is KubeObjectsReady as this pass decided it (kubeobjects.go); nil
	// leaves the condition as it was (no capture was due).
	kubeObjectsReady *metav1.Condition
	// workloadsReady is WorkloadsReady as this pass judged it (workloads.go); nil leaves the
	// condition as it was.
	workloadsReady *metav1.Condition
	// hookCondition, when set, is the condition (DataReady on a relocation's source,
	// WorkloadsReady on a promoted target) that says a hook runs or failed (hooks.go); it is
	// written over the one the pass computed.
	hookCondition *metav1.Condition
	// syncHookCondition, on a primary whose sync cycle is held by a failed BeforeSync hook
	// (volsync_cycles.go), is DataProtected saying so; it is written over the one computed.
	syncHookCondition *metav1.Condition
	// capturedEverywhere is when this pass found every store holding the current capture of
	// the objects; zero when no capture was due or a store lacks it. With no PVC selected it is
	// the group's recovery point (status.lastGroupSyncTime).
	capturedEverywhere time.Time
	// volSyncUnreachable, on a secondary, is DataProtected when a VolSync destination has no
	// address the peer can use or no user for its mover (receiveVolSync); nil otherwise.
	volSyncUnreachable *metav1.Condition
	// volSyncKeys, on a primary, are the PVCs (by namespace/name) whose destination's key is not
	// on this cluster, and why (fetchVolSyncKeys, volsync_keys.go).
	volSyncKeys map[string]replication.Result
	// built are the stores this pass built, by profile name (storeOf): each credentials Secret
	// is read once per pass.
	built map[string]builtStore
}

// builtStore is a store built for a pass, or why it could not be.
type builtStore struct {
	store objectstore.Store
	err   error
}

func newScope(vrg *v1alpha1.VolumeReplicationGroup) *scope {
	return &scope{vrg: vrg, before: vrg.DeepCopy()}
}

// pvcState is what one reconcile learned of one selected PVC.
type pvcState struct {
	pvc *corev1.PersistentVolumeClaim
	// pv is the PV the PVC is bound to; nil while it is not bound.
	pv *corev1.PersistentVolume
	// storageClass is the PVC's StorageClass name.
	storageClass string
	// backend is the selected backend's name; empty when none was selected.
	backend v1alpha1.ReplicationBackend
	// protected is what this pass gave the backend's Protect; nil when Protect was not called.
	protected *replication.PVCContext
	// result says whether the PVC's replication is established (DataReady).
	result replication.Result
	// sync is the backend's observation of the last sync.
	sync replication.SyncStatus
	// writeMetadata is true when the PV and PVC are to be written to the stores.
	writeMetadata bool
	// secondary is true when the PVC is being demoted (its group is secondary); result then
	// says whether it is secondary.
	secondary bool
	// demotion is how this pass demotes the PVC (prepareDemotions); nil when it is not bound or
	// cannot be demoted, and result says why.
	demotion *demotion
	// moverUser is who the PVC's VolSync movers run as, resolved by this pass
	// (volsync_identity.go); nil when it was not, or no one is known.
	moverUser *v1alpha1.VolSyncMoverSecurityContext
	// group is the consistency group the PVC is replicated with (groups.go); nil when it is
	// replicated on its own. groupProblem says why it cannot be in its group; it is then not
	// protected at all.
	group        *replication.GroupContext
	groupProblem string
	// release, for a demoted PVC the application deleted on this secondary, says what the
	// release of its VolumeReplication waits for (keepReplica); the PVC is secondary meanwhile.
	release string
}

func (p *pvcState) key() string { return p.pvc.Namespace + "/" + p.pvc.Name }

// storeOutcome is the result of writing the metadata to one S3 profile.
type storeOutcome struct {
	name string
	err  error
}
