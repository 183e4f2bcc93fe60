package v1alpha1

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnotationPromotedWithoutHub marks a VolumeReplicationGroup that `drover failover
// --without-hub` promoted, writing into it what the hub writes for a failover, while no hub could
// (docs/decisions/0014-failover-without-the-hub.md). Its value is a PromotedWithoutHub as JSON.
// A hub whose DRPlacementControl does not already run the application on that group's cluster
// never writes to either of the application's groups while the mark holds: its status is older
// than the group's truth, and acting on it would demote the group that holds every write made
// since.
const AnnotationPromotedWithoutHub = "drover.io/promoted-without-hub"

// ReasonPromotedWithoutHub (DRPlacementControl ActionAccepted): a group of the application was
// promoted without the hub; the hub does not act on the DRPlacementControl until its spec asks
// for a failover to that group's cluster, which adopts the promotion.
const ReasonPromotedWithoutHub = "PromotedWithoutHub"

// EventPromotionAdopted (DRPlacementControl): the hub adopts a promotion made without it.
const EventPromotionAdopted = "PromotionAdopted"

// PromotedWithoutHub is the value of AnnotationPromotedWithoutHub.
//
// +kubebuilder:object:generate=false
type PromotedWithoutHub struct {
	// Cluster is the cluster the person named as the failover's target (--to).
	Cluster string `json:"cluster"`
	// From is the cluster the application ran on, as the person named it; empty when unknown.
	From string `json:"from,omitempty"`
	// Generation is the group's generation that the promotion wrote. The mark holds while the
	// group's spec is still that one (any later change of the spec ends it), until a hub
	// settled with the application on that cluster, having adopted the promotion, removes it.
	Generation int64 `json:"generation"`
	// At is when the promotion was written.
	At metav1.Time `json:"at"`
	// LastGroupSyncTime is the group's last sync when it was promoted: the recovery point.
	LastGroupSyncTime *metav1.Time `json:"lastGroupSyncTime,omitempty"`
}

// PromotedWithoutHubMark returns a group's mark when it holds: the annotation is there, valid,
// and names the group's current generation with the group asked to be primary. An annotation
// that cannot be read is reported as an error: a mark is never ignored silently.
func PromotedWithoutHubMark(vrg *VolumeReplicationGroup) (*PromotedWithoutHub, error) {
	if vrg == nil {
		return nil, nil
	}
	raw, ok := vrg.Annotations[AnnotationPromotedWithoutHub]
	if !ok {
		return nil, nil
	}
	m := &PromotedWithoutHub{}
	if err := json.Unmarshal([]byte(raw), m); err != nil {
		return nil, fmt.Errorf("failed to read annotation %s of VolumeReplicationGroup %s/%s: %w", AnnotationPromotedWithoutHub, vrg.Namespace, vrg.Name, err)
	}
	if m.Generation != vrg.Generation || vrg.Spec.ReplicationState != ReplicationStatePrimary {
		return nil, nil
	}
	return m, nil
}
