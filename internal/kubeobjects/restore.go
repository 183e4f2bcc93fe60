package kubeobjects

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/pod-security-admission/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/podsecurity"
)

// RestoreResult counts what a restore did.
type RestoreResult struct {
	// Created are the objects created; Adopted those that existed and were left as they are.
	Created, Adopted int
	// Waiting are the tiers' objects not attempted because an earlier tier failed.
	Waiting int
	// Refused name the objects not created because the Pod Security level of their namespace
	// refuses their pods, each with the reasons: "Deployment.apps ns/name: violates PodSecurity
	// ...". An object refused so that exists already (a person created it) is adopted instead.
	Refused []string
}

// Restore creates the objects that do not exist, tier by tier in Order: an object that exists is
// adopted and never overwritten (a Namespace only gains the stored labels and annotations it
// lacks, and its Pod Security level is raised to the stored one, never lowered). When an object
// of a tier fails, the tier's other objects are still tried but the later tiers wait for the next
// call, so workloads never start without their configuration. An object whose pods the level its
// namespace enforces (read once the namespaces are restored, never below podsecurity.Floor)
// would refuse is not created: it is in Refused. It is idempotent: call it again until it returns
// no error.
func Restore(ctx context.Context, c client.Client, objects []*unstructured.Unstructured, fieldOwner string) (RestoreResult, error) {
	ordered := slices.Clone(objects)
	Order(ordered)
	var res RestoreResult
	var errs []error
	var levels map[string]api.LevelVersion
	for i, obj := range ordered {
		tier := TierOf(obj.GroupVersionKind().GroupKind())
		if len(errs) > 0 && (i == 0 || tier != TierOf(ordered[i-1].GroupVersionKind().GroupKind())) {
			res.Waiting = len(ordered) - i
			break
		}
		if tier != TierNamespace && levels == nil {
			var err error
			if levels, err = namespaceLevels(ctx, c, ordered[i:]); err != nil {
				res.Waiting = len(ordered) - i
				return res, err
			}
		}
		if why := podsecurity.TemplateViolations(obj, levels[obj.GetNamespace()]); tier != TierNamespace && why != "" {
			exists, err := existing(ctx, c, obj)
			if err != nil || !exists {
				res.Refused = append(res.Refused, Key(obj)+": "+why)
				errs = appendIf(errs, err)
				continue
			}
		}
		created, err := restoreOne(ctx, c, obj, fieldOwner)
		switch {
		case err != nil:
			errs = append(errs, err)
		case created:
			res.Created++
		default:
			res.Adopted++
		}
	}
	return res, errors.Join(errs...)
}

// namespaceLevels reads the Pod Security level that each namespace of objects enforces, never
// below podsecurity.Floor, as the restore judges their pod templates.
func namespaceLevels(ctx context.Context, c client.Client, objects []*unstructured.Unstructured) (map[string]api.LevelVersion, error) {
	levels := map[string]api.LevelVersion{}
	for _, o := range objects {
		name := o.GetNamespace()
		if _, ok := levels[name]; ok || name == "" {
			continue
		}
		ns := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
			return nil, fmt.Errorf("failed to get namespace %s to read its Pod Security level: %w", name, err)
		}
		lv := podsecurity.Enforced(ns.Labels)
		if podsecurity.Stricter(lv.Level, podsecurity.Floor) != lv.Level {
			lv = api.LevelVersion{Level: podsecurity.Floor, Version: api.LatestVersion()}
		}
		levels[name] = lv
	}
	return levels, nil
}

// existing reports whether obj exists.
func existing(ctx context.Context, c client.Client, obj *unstructured.Unstructured) (bool, error) {
	meta := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind()}}
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), meta)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("failed to get %s: %w", Key(obj), err)
	}
	return true, nil
}

func appendIf(errs []error, err error) []error {
	if err != nil {
		return append(errs, err)
	}
	return errs
}

// LabelRestoredRBAC marks the Roles and RoleBindings a restore creates. The agent's identity
// may create no other, and those only in a namespace that holds a group, a drill's sandbox, or
// a namespace an administrator labelled drover.io/restore-rbac=true (the admission policies
// drover-agent-identity and drover-agent-rbac, config/agent/base/identity_policy.yaml).
const LabelRestoredRBAC = "drover.io/restored-rbac"

// restoreOne creates one object unless it exists; it reports whether it created it; a Role or
// RoleBinding carries LabelRestoredRBAC.
func restoreOne(ctx context.Context, c client.Client, stored *unstructured.Unstructured, fieldOwner string) (bool, error) {
	obj := stored.DeepCopy()
	if gk := obj.GroupVersionKind().GroupKind(); gk == KindRole || gk == KindRoleBind {
		labels := obj.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[LabelRestoredRBAC] = "true"
		obj.SetLabels(labels)
	}
	err := c.Create(ctx, obj, client.FieldOwner(fieldOwner))
	switch {
	case err == nil:
		return true, nil
	case !apierrors.IsAlreadyExists(err):
		return false, fmt.Errorf("failed to restore %s: %w", Key(stored), err)
	case obj.GroupVersionKind().GroupKind() == KindNamespace:
		return false, completeNamespace(ctx, c, stored, fieldOwner)
	}
	return false, nil
}

// completeNamespace adds to an existing namespace the stored labels and annotations it lacks
// (a namespace created empty before the PVCs were restored, or by someone else), never changing
// one it has, but for its Pod Security level: raised to the stored one when it is weaker.
func completeNamespace(ctx context.Context, c client.Client, stored *unstructured.Unstructured, fieldOwner string) error {
	ns := &unstructured.Unstructured{}
	ns.SetGroupVersionKind(stored.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKey{Name: stored.GetName()}, ns); err != nil {
		return fmt.Errorf("failed to get namespace %s: %w", stored.GetName(), err)
	}
	before := ns.DeepCopy()
	want := maps.Clone(stored.GetLabels())
	level := want[podsecurity.LabelEnforce]
	delete(want, podsecurity.LabelEnforce)
	delete(want, podsecurity.LabelEnforceVersion)
	l, a := addMissing(ns.GetLabels(), want), addMissing(ns.GetAnnotations(), stored.GetAnnotations())
	if level != "" {
		l, _ = podsecurity.Raise(l, api.Level(level))
	}
	if maps.Equal(l, ns.GetLabels()) && maps.Equal(a, ns.GetAnnotations()) {
		return nil
	}
	ns.SetLabels(l)
	ns.SetAnnotations(a)
	if err := c.Patch(ctx, ns, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("failed to add the stored labels to namespace %s: %w", stored.GetName(), err)
	}
	return nil
}

// addMissing returns have with the entries of want whose keys it lacks.
func addMissing(have, want map[string]string) map[string]string {
	out := maps.Clone(have)
	for k, v := range want {
		if _, ok := out[k]; ok {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}

// DeleteWorkloads deletes, in the namespaces, the objects of the workload resources that the
// selection selects and that no controller owns (a Job of a CronJob goes with its CronJob), so
// their pods go and release their PVCs. The PVCs stay: a StatefulSet leaves its claims, and
// nothing here deletes one. It returns the objects that still exist (being deleted included);
// none means done. Call it again until it returns none.
func DeleteWorkloads(ctx context.Context, c client.Client, resources []Resource, namespaces []string, sel Selection) ([]string, error) {
	var remaining []string
	var errs []error
	for _, ns := range namespaces {
		for _, r := range resources {
			if !IsWorkload(r.GVK.GroupKind()) {
				continue
			}
			items, err := list(ctx, c, r, ns, sel)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			for _, item := range items {
				if controlled(item) {
					continue
				}
				remaining = append(remaining, Key(item))
				if item.GetDeletionTimestamp() != nil {
					continue
				}
				// Background: the object goes at once and the garbage collector deletes its pods.
				if err := c.Delete(ctx, item, client.PropagationPolicy("Background")); err != nil && !apierrors.IsNotFound(err) {
					errs = append(errs, fmt.Errorf("failed to delete %s: %w", Key(item), err))
				}
			}
		}
	}
	return remaining, errors.Join(errs...)
}
