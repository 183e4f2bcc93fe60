package drcluster

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/gateway"
)

func TestReachableTurnsFalseOnlyAfterTheGracePeriod(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	refused := errors.New("connection refused")
	unauthorized := fmt.Errorf("failed to list VolumeReplicationGroups: %w", apierrors.NewUnauthorized("connection refused: invalid bearer token"))
	hubToken := func(expires time.Time) credential {
		return credential{token: gateway.Token{Claims: gateway.TokenClaims{
			IssuedAt: expires.Add(-8 * time.Hour), Expires: expires, Namespace: "drover-system", ServiceAccount: "drover-hub",
		}}}
	}
	for _, tc := range []struct {
		name         string
		err          error
		failingSince time.Time
		cred         credential
		status       metav1.ConditionStatus
		reason       string
	}{
		{"a probe that succeeds", nil, time.Time{}, credential{}, metav1.ConditionTrue, v1alpha1.ReasonSucceeded},
		{"a probe failing for less than the grace period", refused, now.Add(-5 * time.Second), credential{}, metav1.ConditionTrue, v1alpha1.ReasonProbeFailing},
		{"a probe failing for the grace period", refused, now.Add(-15 * time.Second), credential{}, metav1.ConditionFalse, v1alpha1.ReasonUnreachable},
		{"a token that expired unrenewed, at once", unauthorized, now, hubToken(now.Add(-time.Minute)), metav1.ConditionFalse, v1alpha1.ReasonCredentialExpired},
		{"a token refused before it expires, in the grace period", unauthorized, now.Add(-5 * time.Second), hubToken(now.Add(time.Hour)), metav1.ConditionTrue, v1alpha1.ReasonProbeFailing},
		{"a token refused before it expires, after the grace period", unauthorized, now.Add(-15 * time.Second), hubToken(now.Add(time.Hour)), metav1.ConditionFalse, v1alpha1.ReasonCredentialRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := reachableCondition("east", tc.err, tc.failingSince, now, 15*time.Second, tc.cred)
			if c.Status != tc.status || c.Reason != tc.reason {
				t.Fatalf("got %s/%s (%s), want %s/%s", c.Status, c.Reason, c.Message, tc.status, tc.reason)
			}
			if tc.err != nil && !strings.Contains(c.Message, "connection refused") {
				t.Fatalf("the message %q does not carry the last error", c.Message)
			}
			if c.Status == metav1.ConditionFalse && tc.cred.token.Expiring() && !strings.Contains(c.Message, "run `drover cluster join east` again") {
				t.Fatalf("the message %q does not say to join the cluster again", c.Message)
			}
		})
	}
}

func TestValidatedNeedsAUsableKubeconfigAndOneSuccessfulProbe(t *testing.T) {
	validated := &v1alpha1.DRCluster{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Status: v1alpha1.DRClusterStatus{Conditions: []metav1.Condition{{
		Type: v1alpha1.ConditionValidated, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded, ObservedGeneration: 1,
	}}}}
	fresh := &v1alpha1.DRCluster{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
	refused := errors.New("connection refused")
	noSecret := fmt.Errorf("%w for DRCluster east: secret not found", gateway.ErrNoKubeconfig)
	for _, tc := range []struct {
		name   string
		drc    *v1alpha1.DRCluster
		err    error
		status metav1.ConditionStatus
		reason string
	}{
		{"a cluster that answered", fresh, nil, metav1.ConditionTrue, v1alpha1.ReasonSucceeded},
		{"a cluster that never answered", fresh, refused, metav1.ConditionFalse, v1alpha1.ReasonNeverReachable},
		{"a validated cluster that became unreachable stays validated", validated, refused, metav1.ConditionTrue, v1alpha1.ReasonSucceeded},
		{"a cluster whose kubeconfig Secret is missing", validated, noSecret, metav1.ConditionFalse, v1alpha1.ReasonNoKubeconfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validatedCondition(tc.drc, tc.err)
			if c.Status != tc.status || c.Reason != tc.reason {
				t.Fatalf("got %s/%s (%s), want %s/%s", c.Status, c.Reason, c.Message, tc.status, tc.reason)
			}
		})
	}
}

func TestAClusterDeclaredLostWithNoKubeconfigIsFencedAndSaysHowItIsReachedAgain(t *testing.T) {
	noSecret := fmt.Errorf("%w for DRCluster east: failed to get Secret drover-system/drover-cluster-east: not found", gateway.ErrNoKubeconfig)
	lost := func(byRestore bool) *v1alpha1.DRCluster {
		drc := &v1alpha1.DRCluster{ObjectMeta: metav1.ObjectMeta{Name: "east", Generation: 1},
			Spec: v1alpha1.DRClusterSpec{Lost: &v1alpha1.DRClusterLost{Reason: "it did not answer"}}}
		if byRestore {
			drc.Annotations = map[string]string{v1alpha1.AnnotationLostDeclaredByRestore: "2026-12-07T22:00:00Z"}
		}
		return drc
	}
	for _, tc := range []struct {
		name      string
		byRestore bool
		step      string
	}{
		{"declared by a restore", true, "run drover hub restore again with its --cluster-kubeconfig, which joins east and lifts this declaration"},
		{"declared by a person", false, "join it (drover cluster join east), then lift the declaration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drc := lost(tc.byRestore)
			v := validatedCondition(drc, noSecret)
			if v.Status != metav1.ConditionFalse || v.Reason != v1alpha1.ReasonNoKubeconfig ||
				!strings.Contains(v.Message, "expected while the cluster is declared lost and not joined to this hub") || !strings.Contains(v.Message, tc.step) ||
				!strings.Contains(v.Message, "the DRPolicies pairing it are Validated without it") {
				t.Fatalf("Validated: %s/%s %q", v.Status, v.Reason, v.Message)
			}
			f := fencedCondition(drc, noSecret)
			if f.Status != metav1.ConditionTrue || f.Reason != v1alpha1.ReasonDeclaredLost ||
				!strings.Contains(f.Message, "declared lost (it did not answer)") || !strings.Contains(f.Message, "holds no kubeconfig for it") || !strings.Contains(f.Message, tc.step) {
				t.Fatalf("Fenced: %s/%s %q", f.Status, f.Reason, f.Message)
			}
		})
	}
	// Not declared lost, a missing kubeconfig is a mistake to fix, as before.
	v := validatedCondition(&v1alpha1.DRCluster{ObjectMeta: metav1.ObjectMeta{Name: "east"}}, noSecret)
	if !strings.Contains(v.Message, "create the Secret named by spec.kubeconfigSecretRef") {
		t.Fatalf("Validated: %q", v.Message)
	}
}
