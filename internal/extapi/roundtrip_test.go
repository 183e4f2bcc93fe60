package extapi_test

import (
	"strings"
	"testing"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ocmv1beta1 "github.com/drover-io/drover/internal/extapi/ocm/v1beta1"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
)

// These tests prove that the generated external CRDs install and keep every field of the typed
// structs: the API server prunes a field that the schema lacks, and the round trip would lose it.

const testNamespace = "default"

var syncTime = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

func ptr[T any](v T) *T { return &v }

func condition(conditionType, reason string) metav1.Condition {
	return metav1.Condition{
		Type: conditionType, Status: metav1.ConditionTrue, Reason: reason, Message: "test",
		LastTransitionTime: syncTime, ObservedGeneration: 1,
	}
}

// roundTrip creates obj, writes its status through the status subresource when setStatus is
// set, and reads it back into got, as the API server stores it.
func roundTrip[T client.Object](t *testing.T, obj, got T, setStatus func(T)) {
	t.Helper()
	if err := k8sClient.Create(t.Context(), obj); err != nil {
		t.Fatalf("failed to create %T: %v", obj, err)
	}
	if setStatus != nil {
		setStatus(obj)
		if err := k8sClient.Status().Update(t.Context(), obj); err != nil {
			t.Fatalf("failed to update the status of %T: %v", obj, err)
		}
	}
	if err := k8sClient.Get(t.Context(), client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatalf("failed to get %T: %v", obj, err)
	}
}

func expectSame(t *testing.T, what string, want, got any) {
	t.Helper()
	if !equality.Semantic.DeepEqual(want, got) {
		t.Fatalf("%s changed in the round trip:\nwant %+v\n got %+v", what, want, got)
	}
}

func TestVolumeReplicationRoundTrip(t *testing.T) {
	spec := replicationv1alpha1.VolumeReplicationSpec{
		VolumeReplicationClass: "rbd-5m",
		ReplicationState:       replicationv1alpha1.Primary,
		DataSource:             corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "data"},
		AutoResync:             true,
	}
	status := replicationv1alpha1.VolumeReplicationStatus{
		State:              replicationv1alpha1.PrimaryState,
		Message:            "volume is promoted to primary and replicating to secondary",
		Conditions:         []metav1.Condition{condition(replicationv1alpha1.ConditionCompleted, "Promoted")},
		ObservedGeneration: 1,
		LastCompletionTime: &syncTime,
		LastSyncTime:       &syncTime,
		LastSyncBytes:      ptr(int64(4096)),
		LastSyncDuration:   &metav1.Duration{Duration: 5 * time.Second},
	}
	vr := &replicationv1alpha1.VolumeReplication{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: testNamespace},
		Spec:       spec,
	}
	got := &replicationv1alpha1.VolumeReplication{}
	roundTrip(t, vr, got, func(v *replicationv1alpha1.VolumeReplication) { v.Status = status })
	expectSame(t, "spec", spec, got.Spec)
	expectSame(t, "status", status, got.Status)

	got.Spec.VolumeReplicationClass = "rbd-10m"
	err := k8sClient.Update(t.Context(), got)
	if err == nil || !strings.Contains(err.Error(), "volumeReplicationClass is immutable") {
		t.Fatalf("expected changing the class to be rejected as immutable, got: %v", err)
	}
}

func TestVolumeReplicationClassRoundTrip(t *testing.T) {
	spec := replicationv1alpha1.VolumeReplicationClassSpec{
		Provisioner: "lab.csi.drover.io",
		Parameters:  map[string]string{"schedulingInterval": "5m"},
	}
	vrc := &replicationv1alpha1.VolumeReplicationClass{ObjectMeta: metav1.ObjectMeta{Name: "lab-5m"}, Spec: spec}
	got := &replicationv1alpha1.VolumeReplicationClass{}
	roundTrip(t, vrc, got, nil)
	expectSame(t, "spec", spec, got.Spec)
}

func TestReplicationSourceRoundTrip(t *testing.T) {
	spec := volsyncv1alpha1.ReplicationSourceSpec{
		SourcePVC: "data",
		Trigger:   &volsyncv1alpha1.TriggerSpec{Schedule: ptr("*/5 * * * *"), Manual: "final-1"},
		RsyncTLS: &volsyncv1alpha1.ReplicationSourceRsyncTLSSpec{
			CopyMethod:              volsyncv1alpha1.CopyMethodSnapshot,
			StorageClassName:        ptr("lab-fs"),
			AccessModes:             []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeSnapshotClassName: ptr("lab-snapshots"),
			KeySecret:               ptr("data-psk"),
			Address:                 ptr("10.0.0.7"),
			Port:                    ptr(int32(8000)),
		},
	}
	status := &volsyncv1alpha1.ReplicationSourceStatus{
		LastSyncTime:      &syncTime,
		LastSyncStartTime: &syncTime,
		LastSyncDuration:  &metav1.Duration{Duration: 3 * time.Second},
		NextSyncTime:      &syncTime,
		LastManualSync:    "final-1",
		RsyncTLS:          &volsyncv1alpha1.ReplicationSourceRsyncTLSStatus{KeySecret: ptr("data-psk")},
		Conditions:        []metav1.Condition{condition(volsyncv1alpha1.ConditionSynchronizing, volsyncv1alpha1.SynchronizingReasonManual)},
	}
	rs := &volsyncv1alpha1.ReplicationSource{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: testNamespace},
		Spec:       spec,
	}
	got := &volsyncv1alpha1.ReplicationSource{}
	roundTrip(t, rs, got, func(r *volsyncv1alpha1.ReplicationSource) { r.Status = status })
	expectSame(t, "spec", spec, got.Spec)
	expectSame(t, "status", status, got.Status)
}

func TestReplicationDestinationRoundTrip(t *testing.T) {
	spec := volsyncv1alpha1.ReplicationDestinationSpec{
		Trigger: &volsyncv1alpha1.TriggerSpec{Manual: "first"},
		RsyncTLS: &volsyncv1alpha1.ReplicationDestinationRsyncTLSSpec{
			CopyMethod:              volsyncv1alpha1.CopyMethodSnapshot,
			Capacity:                ptr(resource.MustParse("1Gi")),
			StorageClassName:        ptr("lab-fs"),
			AccessModes:             []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeSnapshotClassName: ptr("lab-snapshots"),
			DestinationPVC:          ptr("data"),
			KeySecret:               ptr("data-psk"),
			ServiceType:             ptr(corev1.ServiceTypeClusterIP),
		},
	}
	status := &volsyncv1alpha1.ReplicationDestinationStatus{
		LastSyncTime:      &syncTime,
		LastSyncStartTime: &syncTime,
		LastSyncDuration:  &metav1.Duration{Duration: 3 * time.Second},
		LastManualSync:    "first",
		LatestImage: &corev1.TypedLocalObjectReference{
			APIGroup: ptr("snapshot.storage.k8s.io"), Kind: "VolumeSnapshot", Name: "data-20260102030405",
		},
		RsyncTLS: &volsyncv1alpha1.ReplicationDestinationRsyncTLSStatus{
			KeySecret: ptr("data-psk"), Address: ptr("10.0.0.7"), Port: ptr(int32(8000)),
		},
		Conditions: []metav1.Condition{condition(volsyncv1alpha1.ConditionSynchronizing, volsyncv1alpha1.SynchronizingReasonSync)},
	}
	rd := &volsyncv1alpha1.ReplicationDestination{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: testNamespace},
		Spec:       spec,
	}
	got := &volsyncv1alpha1.ReplicationDestination{}
	roundTrip(t, rd, got, func(r *volsyncv1alpha1.ReplicationDestination) { r.Status = status })
	expectSame(t, "spec", spec, got.Spec)
	expectSame(t, "status", status, got.Status)
}

func TestPlacementDecisionRoundTrip(t *testing.T) {
	status := ocmv1beta1.PlacementDecisionStatus{
		Decisions: []ocmv1beta1.ClusterDecision{{ClusterName: "east", Reason: "drover: preferred cluster"}},
	}
	pd := &ocmv1beta1.PlacementDecision{
		ObjectMeta: metav1.ObjectMeta{
			Name: "app-decision-1", Namespace: testNamespace,
			Labels: map[string]string{ocmv1beta1.PlacementLabel: "app"},
		},
	}
	got := &ocmv1beta1.PlacementDecision{}
	roundTrip(t, pd, got, func(p *ocmv1beta1.PlacementDecision) { p.Status = status })
	expectSame(t, "status", status, got.Status)
}

func TestVolumeSnapshotCRDIsInstalled(t *testing.T) {
	spec := snapshotv1.VolumeSnapshotSpec{
		Source:                  snapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr("data")},
		VolumeSnapshotClassName: ptr("lab-snapshots"),
	}
	vs := &snapshotv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: testNamespace}, Spec: spec}
	got := &snapshotv1.VolumeSnapshot{}
	roundTrip(t, vs, got, nil)
	expectSame(t, "spec", spec, got.Spec)
}

func TestPlacementRoundTrip(t *testing.T) {
	spec := ocmv1beta1.PlacementSpec{NumberOfClusters: ptr(int32(1))}
	status := ocmv1beta1.PlacementStatus{NumberOfSelectedClusters: 1}
	p := &ocmv1beta1.Placement{
		ObjectMeta: metav1.ObjectMeta{
			Name: "app", Namespace: testNamespace,
			Annotations: map[string]string{ocmv1beta1.PlacementDisableAnnotation: "true"},
		},
		Spec: spec,
	}
	got := &ocmv1beta1.Placement{}
	roundTrip(t, p, got, func(p *ocmv1beta1.Placement) { p.Status = status })
	expectSame(t, "spec", spec, got.Spec)
	expectSame(t, "status", status, got.Status)
}
