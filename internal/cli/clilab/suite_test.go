// Package clilab tests the CLI's day-2 verbs (validate, gather, events) against a lab of three
// clusters: they reach the managed clusters, which internal/cli's own suite, one API server,
// has not. No hub or agent runs: the tests write the objects and statuses drover would, then
// break the lab (a stopped cluster, a deleted StorageClass) to see the checks fail.
package clilab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/config"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/labtest"
)

var testLab *labtest.Lab

// statusTime is when the statuses say the application last synced and captured; the tests of
// ages validate as of statusTimeNow, so a slow machine does not age them.
var statusTime = metav1.NewTime(time.Now().Truncate(time.Second))

func statusTimeNow() time.Time { return statusTime.Add(2 * time.Second) }

func TestMain(m *testing.M) {
	labtest.Main(m, func(l *labtest.Lab) {
		testLab = l
		if err := setUp(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: failed to set the lab up for the day-2 verbs:", err)
			l.Teardown(1)
			os.Exit(1)
		}
	})
}

// The objects every test shares: the application app/db protected by DRPolicy day2 from east
// to west.
const (
	appNamespace = "shop"
	appName      = "db"
	policyName   = "day2"
	interval     = 5 * time.Second
	// plantedPassword and plantedToken are Secret values on the clusters; gather must leave
	// no trace of them.
	plantedPassword = "planted-password-7f3a9c1e5b"
	plantedToken    = "planted-token-QmV5b25kVGhlU2Vh"
)

func clusterClient(cluster string) client.Client {
	cl, err := testLab.Client(cluster, v1alpha1.AddToScheme)
	if err != nil {
		panic(err)
	}
	return cl
}

func restConfig(cluster string) *rest.Config {
	c, err := testLab.Cluster(cluster)
	if err != nil {
		panic(err)
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		panic(err)
	}
	return cfg
}

// setUp writes what the hub, the agents and an administrator would have: the DRClusters with
// their kubeconfig Secrets, the policy, the application's DRPlacementControl and groups, a PVC,
// a VolumeReplicationClass, and Secrets holding the planted values.
func setUp(ctx context.Context) error {
	hub := clusterClient(lab.Hub)
	for _, name := range []string{lab.East, lab.West} {
		c, err := testLab.Cluster(name)
		if err != nil {
			return err
		}
		kc, err := c.Kubeconfig("drover-day2-test", []string{"system:masters"})
		if err != nil {
			return err
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: lab.DroverNamespace, Name: lab.KubeconfigSecretName(name)},
			Data: map[string][]byte{v1alpha1.KubeconfigSecretKey: kc, "token": []byte(plantedToken)}}
		drc := &v1alpha1.DRCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.DRClusterSpec{
			KubeconfigSecretRef: v1alpha1.SecretRef{Namespace: lab.DroverNamespace, Name: secret.Name},
			S3ProfileName:       lab.S3ProfileName(name), Region: name}}
		if err := createAll(ctx, hub, secret, drc); err != nil {
			return err
		}
		if err := setConditions(ctx, hub, drc, &drc.Status.Conditions, v1alpha1.ConditionValidated, v1alpha1.ConditionReachable); err != nil {
			return err
		}
		if err := createAll(ctx, clusterClient(name), volumeReplicationClass()); err != nil {
			return err
		}
		if err := installAgentIdentityPolicy(ctx, clusterClient(name)); err != nil {
			return err
		}
	}
	policy, err := drPolicy()
	if err != nil {
		return err
	}
	if err := createAll(ctx, hub, policy); err != nil {
		return err
	}
	if err := setConditions(ctx, hub, policy, &policy.Status.Conditions, v1alpha1.ConditionValidated); err != nil {
		return err
	}
	return setUpApp(ctx, policy)
}

// setUpApp creates the application on the hub (primary east) and its groups on both clusters.
func setUpApp(ctx context.Context, policy *v1alpha1.DRPolicy) error {
	now := statusTime
	planted := func() *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: appNamespace, Name: "db-credentials",
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"password":"` + plantedPassword + `"}}`}},
			StringData: map[string]string{"password": plantedPassword, "token": plantedToken}}
	}
	for _, name := range []string{lab.Hub, lab.East, lab.West} {
		if err := createAll(ctx, clusterClient(name), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: appNamespace}}, planted()); err != nil {
			return err
		}
	}
	hub := clusterClient(lab.Hub)
	d := &v1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Namespace: appNamespace, Name: appName},
		Spec: v1alpha1.DRPlacementControlSpec{DRPolicyRef: v1alpha1.PolicyReference{Name: policyName}, PreferredCluster: lab.East,
			PVCSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": appName}}, ProtectedNamespaces: []string{appNamespace}}}
	if err := createAll(ctx, hub, d); err != nil {
		return err
	}
	d.Status = v1alpha1.DRPlacementControlStatus{Phase: v1alpha1.PhaseDeployed, Progression: "Completed", CurrentPrimary: lab.East,
		ActionTarget: lab.East, LastGroupSyncTime: &now}
	if err := setConditions(ctx, hub, d, &d.Status.Conditions, v1alpha1.ConditionValidated, v1alpha1.ConditionAvailable,
		v1alpha1.ConditionPeerReady, v1alpha1.ConditionProtected); err != nil {
		return err
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: appNamespace, Name: "data", Labels: map[string]string{"app": appName}},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr(lab.BlockStorageClass), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if err := createAll(ctx, clusterClient(lab.East), pvc); err != nil {
		return err
	}
	for _, name := range []string{lab.East, lab.West} {
		if err := createGroup(ctx, name, policy, name == lab.East); err != nil {
			return err
		}
	}
	return nil
}

// createGroup creates the application's group on a cluster with the status its agent would
// report: replicating, its PVC synced just now.
func createGroup(ctx context.Context, cluster string, policy *v1alpha1.DRPolicy, primary bool) error {
	cl := clusterClient(cluster)
	g := &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: appNamespace, Name: appName,
		Annotations: map[string]string{"drover.io/kube-objects-captured-at": statusTime.UTC().Format(time.RFC3339Nano)}},
		Spec: v1alpha1.VolumeReplicationGroupSpec{ReplicationState: v1alpha1.ReplicationStateSecondary,
			PVCSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": appName}}, ProtectedNamespaces: []string{appNamespace},
			S3Profiles: policy.Spec.S3Profiles, SchedulingInterval: policy.Spec.SchedulingInterval,
			StorageClassBackends: policy.Spec.StorageClassBackends, KubeObjectProtection: &v1alpha1.KubeObjectProtectionSpec{}}}
	conds := []string{v1alpha1.ConditionDataReady, v1alpha1.ConditionDataProtected}
	if primary {
		g.Spec.ReplicationState = v1alpha1.ReplicationStatePrimary
		conds = append(conds, v1alpha1.ConditionClusterDataProtected, v1alpha1.ConditionKubeObjectsReady)
	}
	if err := createAll(ctx, cl, g); err != nil {
		return err
	}
	now := statusTime
	g.Status.State, g.Status.ObservedGeneration = v1alpha1.StateSecondary, g.Generation
	if primary {
		g.Status.State, g.Status.LastGroupSyncTime = v1alpha1.StatePrimary, &now
		g.Status.ProtectedPVCs = []v1alpha1.ProtectedPVC{{Namespace: appNamespace, Name: "data", StorageClassName: lab.BlockStorageClass,
			Backend: v1alpha1.BackendVolRep, ReplicationID: "day2-block", LastSyncTime: &now,
			Conditions: []metav1.Condition{condition(v1alpha1.ConditionDataProtected, g.Generation)}}}
	}
	return setConditions(ctx, cl, g, &g.Status.Conditions, conds...)
}

// setConditions sets the condition types True and writes the object's status.
func setConditions(ctx context.Context, cl client.Client, obj client.Object, conds *[]metav1.Condition, types ...string) error {
	for _, t := range types {
		apimeta.SetStatusCondition(conds, condition(t, obj.GetGeneration()))
	}
	return cl.Status().Update(ctx, obj)
}

func condition(t string, generation int64) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded, Message: t + " as the test sets it",
		ObservedGeneration: generation, LastTransitionTime: metav1.Now()}
}

func drPolicy() (*v1alpha1.DRPolicy, error) {
	profiles, err := testLab.S3Profiles()
	if err != nil {
		return nil, err
	}
	p := &v1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Name: policyName}, Spec: v1alpha1.DRPolicySpec{
		DRClusters: []string{lab.East, lab.West}, SchedulingInterval: v1alpha1.SchedulingInterval(interval.String()),
		StorageClassBackends: []v1alpha1.StorageClassBackend{
			{StorageClassName: lab.BlockStorageClass, Backend: v1alpha1.BackendVolRep},
			{StorageClassName: lab.FileStorageClass, Backend: v1alpha1.BackendVolSync},
		}}}
	for _, prof := range profiles {
		p.Spec.S3Profiles = append(p.Spec.S3Profiles, v1alpha1.S3Profile{Name: prof.Name, Endpoint: prof.Endpoint, Insecure: prof.Insecure,
			Bucket: prof.Bucket, Region: prof.Region, SecretRef: v1alpha1.SecretRef{Namespace: lab.DroverNamespace, Name: prof.Name}})
	}
	return p, nil
}

func volumeReplicationClass() *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "replication.storage.openshift.io/v1alpha1", "kind": "VolumeReplicationClass",
		"metadata": map[string]any{"name": "day2-block"},
		"spec":     map[string]any{"provisioner": lab.BlockDriver, "parameters": map[string]any{"schedulingInterval": interval.String()}},
	}}
	return u
}

func createAll(ctx context.Context, cl client.Client, objs ...client.Object) error {
	for _, o := range objs {
		if err := cl.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("failed to create %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

func fileStorageClass() *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: lab.FileStorageClass}, Provisioner: lab.FileDriver}
}

func ptr[T any](v T) *T { return &v }

// installAgentIdentityPolicy creates the admission policy of the agent's release manifests
// (config/agent/base/identity_policy.yaml) and its binding, as installing the agent does.
func installAgentIdentityPolicy(ctx context.Context, cl client.Client) error {
	raw, err := config.Tree.ReadFile("agent/base/identity_policy.yaml")
	if err != nil {
		return err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("failed to decode the agent's identity policy: %w", err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := createAll(ctx, cl, u); err != nil {
			return err
		}
	}
}
