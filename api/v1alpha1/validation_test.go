package v1alpha1_test

import (
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/drover-io/drover/api/v1alpha1"
)

// The messages the API server returns for drover's CEL rules; the rules live in the types'
// markers.
const (
	msgTwoClusters      = "drClusters must name exactly two distinct clusters"
	msgClustersFixed    = "drClusters is immutable: create a new DRPolicy to pair other clusters"
	msgInterval         = "schedulingInterval must be a positive duration in hours, minutes and seconds, such as 10s, 5m or 1h30m"
	msgOneSelector      = "each storageClassBackends entry must set exactly one of storageClassName or provisioner"
	msgUniqueClass      = "storageClassBackends must name each storageClassName at most once"
	msgEndpoint         = "endpoint must be an http:// or https:// URL"
	msgFailoverTarget   = "action Failover requires failoverCluster: name the cluster to fail over to"
	msgRelocateTarget   = "action Relocate requires preferredCluster: name the cluster to relocate to"
	msgOneMode          = "set exactly one of protectedNamespaces (drover captures and restores the application's objects) or placementRef (a GitOps tool deploys the application)"
	msgModeFixed        = "cannot switch between protectedNamespaces and placementRef: create a new DRPlacementControl"
	msgPolicyRefFixed   = "drPolicyRef is immutable: delete and recreate the DRPlacementControl to change its policy"
	msgPVCSelectorFixed = "pvcSelector is immutable: delete and recreate the DRPlacementControl to protect other PVCs"
)

func TestDRClusterValidation(t *testing.T) {
	runCreateCases(t, []createCase{
		{
			name: "a cluster with a kubeconfig Secret, an S3 profile and a region is accepted",
			obj:  drCluster(),
		},
		{
			name:    "a cluster without an S3 profile name is rejected",
			obj:     drCluster(func(s *v1alpha1.DRClusterSpec) { s.S3ProfileName = "" }),
			wantErr: "spec.s3ProfileName: Required value",
		},
		{
			name:    "a cluster whose kubeconfig Secret has no namespace is rejected",
			obj:     drCluster(func(s *v1alpha1.DRClusterSpec) { s.KubeconfigSecretRef.Namespace = "" }),
			wantErr: "spec.kubeconfigSecretRef.namespace: Required value",
		},
	})
}

func TestDRPolicyValidation(t *testing.T) {
	interval := func(i v1alpha1.SchedulingInterval) func(*v1alpha1.DRPolicySpec) {
		return func(s *v1alpha1.DRPolicySpec) { s.SchedulingInterval = i }
	}
	clusters := func(names ...string) func(*v1alpha1.DRPolicySpec) {
		return func(s *v1alpha1.DRPolicySpec) { s.DRClusters = names }
	}
	runCreateCases(t, []createCase{
		{name: "a policy pairing two clusters every 5m is accepted", obj: drPolicy()},
		{name: "a short interval of 10s is accepted", obj: drPolicy(interval("10s"))},
		{name: "an interval of hours and minutes is accepted", obj: drPolicy(interval("1h30m"))},
		{name: "a policy naming one cluster is rejected", obj: drPolicy(clusters("east")), wantErr: msgTwoClusters},
		{
			name:    "a policy naming three clusters is rejected",
			obj:     drPolicy(clusters("east", "west", "north")),
			wantErr: "spec.drClusters: Too many: 3: must have at most 2 items",
		},
		{
			name:    "a policy naming the same cluster twice is rejected",
			obj:     drPolicy(clusters("east", "east")),
			wantErr: msgTwoClusters,
		},
		{name: "a zero interval is rejected", obj: drPolicy(interval("0s")), wantErr: msgInterval},
		{name: "a negative interval is rejected", obj: drPolicy(interval("-5s")), wantErr: msgInterval},
		{name: "an interval that is not a duration is rejected", obj: drPolicy(interval("abc")), wantErr: msgInterval},
		{name: "an interval with a fraction is rejected", obj: drPolicy(interval("1.5m")), wantErr: msgInterval},
		{
			name:    "a policy without an interval is rejected",
			obj:     drPolicy(interval("")),
			wantErr: "spec.schedulingInterval: Required value",
		},
		{
			name: "a backend entry naming both a class and a provisioner is rejected",
			obj: drPolicy(func(s *v1alpha1.DRPolicySpec) {
				s.StorageClassBackends[0].StorageClassName = "lab-rbd"
			}),
			wantErr: msgOneSelector,
		},
		{
			name: "a backend entry naming neither a class nor a provisioner is rejected",
			obj: drPolicy(func(s *v1alpha1.DRPolicySpec) {
				s.StorageClassBackends[0].Provisioner = ""
			}),
			wantErr: msgOneSelector,
		},
		{
			name: "two backend entries for the same class are rejected",
			obj: drPolicy(func(s *v1alpha1.DRPolicySpec) {
				s.StorageClassBackends = []v1alpha1.StorageClassBackend{
					{StorageClassName: "lab-rbd", Backend: v1alpha1.BackendVolRep},
					{StorageClassName: "lab-rbd", Backend: v1alpha1.BackendVolSync},
				}
			}),
			wantErr: msgUniqueClass,
		},
		{
			name: "a class entry overriding a provisioner entry is accepted",
			obj: drPolicy(func(s *v1alpha1.DRPolicySpec) {
				s.StorageClassBackends = append(s.StorageClassBackends,
					v1alpha1.StorageClassBackend{StorageClassName: "lab-fs", Backend: v1alpha1.BackendVolSync})
			}),
		},
		{
			name: "an S3 endpoint that is not an http URL is rejected",
			obj: drPolicy(func(s *v1alpha1.DRPolicySpec) {
				s.S3Profiles[0].Endpoint = "s3.example.com"
			}),
			wantErr: msgEndpoint,
		},
		{
			name:    "a policy without S3 profiles is rejected",
			obj:     drPolicy(func(s *v1alpha1.DRPolicySpec) { s.S3Profiles = nil }),
			wantErr: "spec.s3Profiles: Required value",
		},
	})
}

func TestDRPolicyUpdateValidation(t *testing.T) {
	runUpdateCases(t, []updateCase[*v1alpha1.DRPolicy]{
		{
			name:    "changing the clusters of a policy is rejected",
			obj:     drPolicy(),
			update:  func(p *v1alpha1.DRPolicy) { p.Spec.DRClusters = []string{"east", "north"} },
			wantErr: msgClustersFixed,
		},
		{
			name:   "changing the interval of a policy is accepted",
			obj:    drPolicy(),
			update: func(p *v1alpha1.DRPolicy) { p.Spec.SchedulingInterval = "10m" },
		},
	})
}

func TestDRPlacementControlValidation(t *testing.T) {
	action := func(a v1alpha1.DRAction) func(*v1alpha1.DRPlacementControlSpec) {
		return func(s *v1alpha1.DRPlacementControlSpec) { s.Action = a }
	}
	runCreateCases(t, []createCase{
		{name: "an application named by protectedNamespaces is accepted", obj: drpc()},
		{name: "an application named by placementRef is accepted", obj: drpc(withPlacementRef)},
		{
			name: "a failover naming the failover cluster is accepted",
			obj: drpc(action(v1alpha1.ActionFailover), func(s *v1alpha1.DRPlacementControlSpec) {
				s.FailoverCluster = "west"
			}),
		},
		{
			name:    "a failover without a failover cluster is rejected",
			obj:     drpc(action(v1alpha1.ActionFailover)),
			wantErr: msgFailoverTarget,
		},
		{
			name: "a relocation without a preferred cluster is rejected",
			obj: drpc(action(v1alpha1.ActionRelocate), func(s *v1alpha1.DRPlacementControlSpec) {
				s.PreferredCluster = ""
			}),
			wantErr: msgRelocateTarget,
		},
		{
			name:    "an action that is not Failover or Relocate is rejected",
			obj:     drpc(action("Restart")),
			wantErr: `spec.action: Unsupported value: "Restart": supported values: "", "Failover", "Relocate"`,
		},
		{
			name: "an application named by both protectedNamespaces and placementRef is rejected",
			obj: drpc(withPlacementRef, func(s *v1alpha1.DRPlacementControlSpec) {
				s.ProtectedNamespaces = []string{"app"}
			}),
			wantErr: msgOneMode,
		},
		{
			name:    "an application named by neither protectedNamespaces nor placementRef is rejected",
			obj:     drpc(func(s *v1alpha1.DRPlacementControlSpec) { s.ProtectedNamespaces = nil }),
			wantErr: msgOneMode,
		},
		{
			name: "a placementRef of a kind other than Placement is rejected",
			obj: drpc(withPlacementRef, func(s *v1alpha1.DRPlacementControlSpec) {
				s.PlacementRef.Kind = "ApplicationSet"
			}),
			wantErr: `spec.placementRef.kind: Unsupported value: "ApplicationSet"`,
		},
		{
			name: "a mover security context with a non-root user, a group and an fsGroup is accepted",
			obj: drpc(func(s *v1alpha1.DRPlacementControlSpec) {
				s.VolSyncMoverSecurityContext = &v1alpha1.VolSyncMoverSecurityContext{RunAsUser: 1000, RunAsGroup: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000)}
			}),
		},
		{
			name: "a mover security context without a user is rejected (root cannot run an unprivileged rsync mover)",
			obj: drpc(func(s *v1alpha1.DRPlacementControlSpec) {
				s.VolSyncMoverSecurityContext = &v1alpha1.VolSyncMoverSecurityContext{FSGroup: ptr.To[int64](2000)}
			}),
			wantErr: "spec.volSyncMoverSecurityContext.runAsUser: Required value",
		},
		{
			name: "a mover security context with a negative fsGroup is rejected",
			obj: drpc(func(s *v1alpha1.DRPlacementControlSpec) {
				s.VolSyncMoverSecurityContext = &v1alpha1.VolSyncMoverSecurityContext{RunAsUser: 1000, FSGroup: ptr.To[int64](-1)}
			}),
			wantErr: "spec.volSyncMoverSecurityContext.fsGroup: Invalid value: -1",
		},
	})
}

func TestDRPlacementControlUpdateValidation(t *testing.T) {
	runUpdateCases(t, []updateCase[*v1alpha1.DRPlacementControl]{
		{
			name:    "changing the policy is rejected",
			obj:     drpc(),
			update:  func(d *v1alpha1.DRPlacementControl) { d.Spec.DRPolicyRef.Name = "east-north" },
			wantErr: msgPolicyRefFixed,
		},
		{
			name: "changing the PVC selector is rejected",
			obj:  drpc(),
			update: func(d *v1alpha1.DRPlacementControl) {
				d.Spec.PVCSelector = metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
			},
			wantErr: msgPVCSelectorFixed,
		},
		{
			name:    "switching from protectedNamespaces to placementRef is rejected",
			obj:     drpc(),
			update:  func(d *v1alpha1.DRPlacementControl) { withPlacementRef(&d.Spec) },
			wantErr: msgModeFixed,
		},
		{
			name: "asking for a failover to a named cluster is accepted",
			obj:  drpc(),
			update: func(d *v1alpha1.DRPlacementControl) {
				d.Spec.Action = v1alpha1.ActionFailover
				d.Spec.FailoverCluster = "west"
			},
		},
		{
			name: "adding a protected namespace is refused: protectedNamespaces is immutable",
			obj:  drpc(),
			update: func(d *v1alpha1.DRPlacementControl) {
				d.Spec.ProtectedNamespaces = append(d.Spec.ProtectedNamespaces, "app-cache")
			},
			wantErr: "protectedNamespaces is immutable: delete and recreate the DRPlacementControl",
		},
	})
}

func TestVolumeReplicationGroupValidation(t *testing.T) {
	runCreateCases(t, []createCase{
		{name: "a primary group with two S3 profiles is accepted", obj: vrg()},
		{
			name: "a secondary group receiving a VolSync PVC is accepted",
			obj: vrg(func(s *v1alpha1.VolumeReplicationGroupSpec) {
				s.ReplicationState = v1alpha1.ReplicationStateSecondary
				s.Action = v1alpha1.ActionFailover
				s.VolSync = &v1alpha1.VolSyncSpec{ReceivePVCs: []v1alpha1.VolSyncReceivePVC{volSyncReceivePVC()}}
			}),
		},
		{
			name: "a replication state other than primary or secondary is rejected",
			obj: vrg(func(s *v1alpha1.VolumeReplicationGroupSpec) {
				s.ReplicationState = "resync"
			}),
			wantErr: `spec.replicationState: Unsupported value: "resync": supported values: "primary", "secondary"`,
		},
		{
			name:    "a group without S3 profiles is rejected",
			obj:     vrg(func(s *v1alpha1.VolumeReplicationGroupSpec) { s.S3Profiles = nil }),
			wantErr: "spec.s3Profiles: Required value",
		},
		{
			name: "a group with an invalid interval is rejected",
			obj: vrg(func(s *v1alpha1.VolumeReplicationGroupSpec) {
				s.SchedulingInterval = "0s"
			}),
			wantErr: msgInterval,
		},
	})
}

// bigSelector is a label selector of n matchLabels.
func bigSelector(n int) metav1.LabelSelector {
	s := metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := range n {
		s.MatchLabels["k"+strconv.Itoa(i)] = "v"
	}
	return s
}

func TestPVCSelectorsAreBounded(t *testing.T) {
	const msg = "pvcSelector may hold at most 32 matchLabels and 16 matchExpressions of at most 64 values each"
	values := make([]string, 65)
	for i := range values {
		values[i] = "v" + strconv.Itoa(i)
	}
	runCreateCases(t, []createCase{
		{name: "a DRPlacementControl selecting by 32 labels is accepted", obj: drpc(func(s *v1alpha1.DRPlacementControlSpec) { s.PVCSelector = bigSelector(32) })},
		{name: "a DRPlacementControl selecting by 33 labels is rejected", obj: drpc(func(s *v1alpha1.DRPlacementControlSpec) { s.PVCSelector = bigSelector(33) }), wantErr: msg},
		{name: "a DRPlacementControl selecting by an expression of 65 values is rejected", obj: drpc(func(s *v1alpha1.DRPlacementControlSpec) {
			s.PVCSelector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: values}}}
		}), wantErr: msg},
		{name: "a group selecting by 1000 labels is rejected", obj: vrg(func(s *v1alpha1.VolumeReplicationGroupSpec) { s.PVCSelector = bigSelector(1000) }), wantErr: msg},
	})
}

// drDrill returns a valid DRDrill, changed by mutate.
func drDrill(mutate ...func(*v1alpha1.DRDrillSpec)) *v1alpha1.DRDrill {
	d := &v1alpha1.DRDrill{ObjectMeta: metav1.ObjectMeta{GenerateName: "drill-", Namespace: testNamespace},
		Spec: v1alpha1.DRDrillSpec{DRPCName: "app"}}
	for _, m := range mutate {
		m(&d.Spec)
	}
	return d
}

func TestDRDrillValidation(t *testing.T) {
	keep := func(d time.Duration) func(*v1alpha1.DRDrillSpec) {
		return func(s *v1alpha1.DRDrillSpec) { s.KeepFor = &metav1.Duration{Duration: d} }
	}
	timeout := func(d time.Duration) func(*v1alpha1.DRDrillSpec) {
		return func(s *v1alpha1.DRDrillSpec) { s.Timeout = &metav1.Duration{Duration: d} }
	}
	runCreateCases(t, []createCase{
		{name: "a drill with the defaults is accepted", obj: drDrill()},
		{name: "a sandbox kept 24h is accepted", obj: drDrill(keep(24 * time.Hour))},
		{name: "a sandbox kept 24h and a second is rejected", obj: drDrill(keep(24*time.Hour + time.Second)), wantErr: "keepFor must be from 0s to 24h"},
		{name: "a negative keep is rejected", obj: drDrill(keep(-time.Second)), wantErr: "keepFor must be from 0s to 24h"},
		{name: "a timeout of 24h is accepted", obj: drDrill(timeout(24 * time.Hour))},
		{name: "a timeout of 25h is rejected", obj: drDrill(timeout(25 * time.Hour)), wantErr: "timeout must be from 1m to 24h"},
		{name: "a timeout of 30s is rejected", obj: drDrill(timeout(30 * time.Second)), wantErr: "timeout must be from 1m to 24h"},
	})
}

func TestDrillSandboxPodSecurityIsRestrictedOrBaseline(t *testing.T) {
	box := func(level v1alpha1.DrillPodSecurity) *v1alpha1.DrillSandbox {
		return &v1alpha1.DrillSandbox{ObjectMeta: metav1.ObjectMeta{GenerateName: "drill-", Namespace: testNamespace},
			Spec: v1alpha1.DrillSandboxSpec{VRGName: "app", DrillID: "abc", PodSecurity: level}}
	}
	runCreateCases(t, []createCase{
		{name: "restricted is accepted", obj: box(v1alpha1.DrillPodSecurityRestricted)},
		{name: "baseline is accepted", obj: box(v1alpha1.DrillPodSecurityBaseline)},
		{name: "privileged is rejected", obj: box("privileged"), wantErr: `spec.podSecurity: Unsupported value: "privileged"`},
	})
}
