package v1alpha1_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
)

// intervalCases are the schedulingInterval values both Duration and the API server judge.
var intervalCases = []struct {
	name     string
	interval v1alpha1.SchedulingInterval
	want     time.Duration // zero when the value is invalid
}{
	{name: "seconds are valid", interval: "10s", want: 10 * time.Second},
	{name: "minutes are valid", interval: "5m", want: 5 * time.Minute},
	{name: "hours and minutes are valid", interval: "1h30m", want: 90 * time.Minute},
	{name: "zero is invalid", interval: "0s"},
	{name: "a negative duration is invalid", interval: "-5s"},
	{name: "a word is invalid", interval: "abc"},
	{name: "a fraction is invalid", interval: "1.5m"},
	{name: "milliseconds are invalid", interval: "500ms"},
	{name: "a number without a unit is invalid", interval: "10"},
	{name: "the empty string is invalid", interval: ""},
}

func TestSchedulingIntervalDuration(t *testing.T) {
	for _, tc := range intervalCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.interval.Duration()
			if tc.want == 0 {
				if err == nil {
					t.Fatalf("Duration(%q) = %v, want an error", tc.interval, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Duration(%q) = %v, %v; want %v, nil", tc.interval, got, err, tc.want)
			}
		})
	}
}

// TestSchedulingIntervalDurationAgreesWithAPIServer proves that Duration accepts exactly the
// values the CRD's validation accepts, so controllers can trust a stored interval.
func TestSchedulingIntervalDurationAgreesWithAPIServer(t *testing.T) {
	for _, tc := range intervalCases {
		t.Run(tc.name, func(t *testing.T) {
			p := drPolicy(func(s *v1alpha1.DRPolicySpec) { s.SchedulingInterval = tc.interval })
			createErr := k8sClient.Create(t.Context(), p)
			_, durationErr := tc.interval.Duration()
			if (createErr == nil) != (durationErr == nil) {
				t.Fatalf("for %q the API server says %v but Duration says %v", tc.interval, createErr, durationErr)
			}
		})
	}
}

func TestSelectBackend(t *testing.T) {
	entries := []v1alpha1.StorageClassBackend{
		{Provisioner: "rbd.csi.ceph.com", Backend: v1alpha1.BackendVolRep},
		{StorageClassName: "rbd-snapshots", Backend: v1alpha1.BackendVolSync},
		{Provisioner: "hostpath.csi.k8s.io", Backend: v1alpha1.BackendVolSync},
	}
	cases := []struct {
		name        string
		class       string
		provisioner string
		want        v1alpha1.ReplicationBackend
		wantFound   bool
	}{
		{name: "a class matches by its provisioner", class: "rbd", provisioner: "rbd.csi.ceph.com",
			want: v1alpha1.BackendVolRep, wantFound: true},
		{name: "an entry naming the class wins over its provisioner's entry", class: "rbd-snapshots",
			provisioner: "rbd.csi.ceph.com", want: v1alpha1.BackendVolSync, wantFound: true},
		{name: "another provisioner matches its own entry", class: "local", provisioner: "hostpath.csi.k8s.io",
			want: v1alpha1.BackendVolSync, wantFound: true},
		{name: "a class matching no entry has no backend", class: "nfs", provisioner: "nfs.csi.k8s.io"},
		{name: "an empty class and provisioner match nothing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, found := v1alpha1.SelectBackend(entries, tc.class, tc.provisioner)
			if got != tc.want || found != tc.wantFound {
				t.Fatalf("SelectBackend(%q, %q) = %q, %v; want %q, %v", tc.class, tc.provisioner, got, found,
					tc.want, tc.wantFound)
			}
		})
	}
}

func TestDRPolicyPeer(t *testing.T) {
	spec := v1alpha1.DRPolicySpec{DRClusters: []string{"east", "west"}}
	cases := []struct {
		name      string
		cluster   string
		want      string
		wantFound bool
	}{
		{name: "the first cluster's peer is the second", cluster: "east", want: "west", wantFound: true},
		{name: "the second cluster's peer is the first", cluster: "west", want: "east", wantFound: true},
		{name: "a cluster outside the policy has no peer", cluster: "north"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, found := spec.Peer(tc.cluster)
			if got != tc.want || found != tc.wantFound {
				t.Fatalf("Peer(%q) = %q, %v; want %q, %v", tc.cluster, got, found, tc.want, tc.wantFound)
			}
		})
	}
}

func TestFinalSyncComplete(t *testing.T) {
	done := func(request string) *v1alpha1.FinalSyncStatus {
		return &v1alpha1.FinalSyncStatus{Request: request, CompletionTime: metav1.Now()}
	}
	cases := []struct {
		name    string
		request string
		status  *v1alpha1.FinalSyncStatus
		want    bool
	}{
		{name: "no request is never complete", status: done("")},
		{name: "a request without a final sync is not complete", request: "2026-01-01T10:00:00Z"},
		{name: "a final sync for an earlier request does not complete a new one",
			request: "2026-01-02T10:00:00Z", status: done("2026-01-01T10:00:00Z")},
		{name: "a final sync for the request completes it",
			request: "2026-01-02T10:00:00Z", status: done("2026-01-02T10:00:00Z"), want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := vrg(func(s *v1alpha1.VolumeReplicationGroupSpec) { s.FinalSyncRequest = tc.request })
			v.Status.FinalSync = tc.status
			if got := v.FinalSyncComplete(); got != tc.want {
				t.Fatalf("FinalSyncComplete() = %v, want %v", got, tc.want)
			}
		})
	}
}
