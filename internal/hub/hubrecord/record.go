package hubrecord

import (
	"encoding/json"
	"fmt"

	"github.com/drover-io/drover/api/v1alpha1"
)

// Annotation is the record the hub writes on each VolumeReplicationGroup it writes: a Record as
// JSON. It is metadata, so writing it changes neither the group's generation nor a mark of a
// failover made without the hub; the agent does not read it.
const Annotation = "drover.io/hub-record"

// AnnotationRestored marks a DRPlacementControl that `drover hub restore` created from the
// groups (its value: when, RFC 3339). The hub rebuilds the status of such a
// DRPlacementControl from its groups before its first step, instead of deploying it.
const AnnotationRestored = "drover.io/restored"

// Record is what a group does not hold of the hub's objects.
type Record struct {
	// DRPC is the group's DRPlacementControl.
	DRPC DRPC `json:"drpc"`
	// Policy is the DRPlacementControl's DRPolicy: its name and clusters; the rest of its spec
	// is in the group's.
	Policy Policy `json:"policy"`
	// Clusters are the policy's DRClusters, in the policy's order.
	Clusters []Cluster `json:"clusters,omitempty"`
}

// DRPC is a DRPlacementControl as recorded.
type DRPC struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Generation is the DRPlacementControl's generation when the record was written: of two
	// groups' records, the higher is the newer.
	Generation int64 `json:"generation"`
	// Spec is the DRPlacementControl's spec, without hookDecision (an answer to one run).
	Spec v1alpha1.DRPlacementControlSpec `json:"spec"`
}

// Policy is a DRPolicy as recorded.
type Policy struct {
	Name       string   `json:"name"`
	DRClusters []string `json:"drClusters"`
}

// Cluster is a DRCluster as recorded: what its spec holds besides the kubeconfig Secret, which
// a restore makes anew.
type Cluster struct {
	Name              string `json:"name"`
	Region            string `json:"region,omitempty"`
	S3ProfileName     string `json:"s3ProfileName,omitempty"`
	ArgoCDClusterName string `json:"argoCDClusterName,omitempty"`
}

// New records drpc, its policy and the policy's DRClusters (those not found are left out).
func New(drpc *v1alpha1.DRPlacementControl, policy *v1alpha1.DRPolicy, clusters map[string]v1alpha1.DRClusterSpec) Record {
	spec := *drpc.Spec.DeepCopy()
	spec.HookDecision = nil
	r := Record{
		DRPC:   DRPC{Name: drpc.Name, Namespace: drpc.Namespace, Generation: drpc.Generation, Spec: spec},
		Policy: Policy{Name: policy.Name, DRClusters: append([]string(nil), policy.Spec.DRClusters...)},
	}
	for _, name := range policy.Spec.DRClusters {
		c, ok := clusters[name]
		if !ok {
			continue
		}
		r.Clusters = append(r.Clusters, Cluster{Name: name, Region: c.Region, S3ProfileName: c.S3ProfileName, ArgoCDClusterName: c.ArgoCDClusterName})
	}
	return r
}

// Encode is the annotation's value.
func (r Record) Encode() (string, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("failed to encode the hub's record: %w", err)
	}
	return string(raw), nil
}

// Of returns a group's record; nil when it has none. A record that cannot be read is an error.
func Of(vrg *v1alpha1.VolumeReplicationGroup) (*Record, error) {
	raw, ok := vrg.Annotations[Annotation]
	if !ok {
		return nil, nil
	}
	r := &Record{}
	if err := json.Unmarshal([]byte(raw), r); err != nil {
		return nil, fmt.Errorf("failed to read annotation %s of VolumeReplicationGroup %s/%s: %w", Annotation, vrg.Namespace, vrg.Name, err)
	}
	if r.DRPC.Name == "" || r.Policy.Name == "" || len(r.Policy.DRClusters) != 2 {
		return nil, fmt.Errorf("annotation %s of VolumeReplicationGroup %s/%s names no DRPlacementControl, or no DRPolicy of two clusters", Annotation, vrg.Namespace, vrg.Name)
	}
	return r, nil
}

// Cluster returns the recorded DRCluster name, and false when the record holds none.
func (r Record) Cluster(name string) (Cluster, bool) {
	for _, c := range r.Clusters {
		if c.Name == name {
			return c, true
		}
	}
	return Cluster{}, false
}
