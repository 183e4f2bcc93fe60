package join

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/objectstore"
)

// Join registers the managed cluster o.Managed with the hub o.Hub as the DRCluster o.Name. It
// checks everything first, then applies on the managed cluster the hub's identity, its token
// and the S3 credentials, waits for the token, and applies on the hub the kubeconfig Secret,
// the profile's Secret and the DRCluster. It is idempotent: joining again with the same inputs
// changes nothing. When a write fails, it deletes what this run created and says so.
func Join(ctx context.Context, opts Options) error {
	o, err := opts.complete()
	if err != nil {
		return err
	}
	hub, err := newTarget("the hub", o.Hub)
	if err != nil {
		return err
	}
	managed, err := newTarget("managed cluster "+o.Name, o.Managed)
	if err != nil {
		return err
	}
	hubNS, managedNS, err := preflight(ctx, o, hub, managed)
	if err != nil {
		return err
	}
	if o.S3.Keys, err = storeKeys(ctx, o, hub); err != nil {
		return err
	}
	managedObjs, err := o.managedObjects()
	if err != nil {
		return err
	}
	peerProfiles, err := otherProfiles(ctx, o, hub)
	if err != nil {
		return err
	}
	managedObjs = append(managedObjs, peerProfiles...)
	if !managedNS {
		managedObjs = prepend(namespace(o.Namespace), managedObjs)
	}
	if o.DryRun {
		return o.dryRun(managedObjs, hubNS)
	}
	r := &run{out: o.Out}
	for _, obj := range managedObjs {
		if err := r.apply(ctx, managed, obj); err != nil {
			return r.undo(ctx, err)
		}
	}
	if err := o.applyHub(ctx, r, hub, managed, hubNS); err != nil {
		return r.undo(ctx, err)
	}
	o.shareProfile(ctx, hub)
	o.printPolicyHint()
	return nil
}

// applyHub waits for the token and applies the hub's objects.
func (o Options) applyHub(ctx context.Context, r *run, hub, managed *target, hubNS bool) error {
	token, ca, err := waitToken(ctx, o, managed)
	if err != nil {
		return err
	}
	kubeconfig, err := o.hubKubeconfig(token, ca)
	if err != nil {
		return err
	}
	objs, err := o.hubObjects(kubeconfig)
	if err != nil {
		return err
	}
	if !hubNS {
		objs = prepend(namespace(o.Namespace), objs)
	}
	for _, obj := range objs {
		if err := r.apply(ctx, hub, obj); err != nil {
			return err
		}
	}
	return nil
}

func prepend(ns *corev1.Namespace, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	u, _ := toUnstructured(ns) // a typed Namespace always converts
	return append([]*unstructured.Unstructured{u}, objs...)
}

// waitToken waits for kube-controller-manager's token controller to fill the token Secret and
// returns the token and the CA the controller published with it.
func waitToken(ctx context.Context, o Options, managed *target) (token, ca []byte, err error) {
	key := client.ObjectKey{Namespace: o.Namespace, Name: TokenSecretName}
	var lastErr error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, o.TokenTimeout, true, func(ctx context.Context) (bool, error) {
		secret := &corev1.Secret{}
		if lastErr = managed.cl.Get(ctx, key, secret); lastErr != nil {
			return false, nil //nolint:nilerr // retried until the timeout, then reported
		}
		token, ca = secret.Data[corev1.ServiceAccountTokenKey], secret.Data[corev1.ServiceAccountRootCAKey]
		return len(token) > 0, nil
	})
	if err != nil {
		msg := fmt.Sprintf("the token controller did not fill Secret %s on %s within %s: check that kube-controller-manager runs there with --service-account-private-key-file and its tokens controller enabled",
			key, managed.role, o.TokenTimeout)
		if lastErr != nil {
			return nil, nil, fmt.Errorf("%s (last error: %w)", msg, managed.explain(lastErr))
		}
		return nil, nil, fmt.Errorf("%s", msg)
	}
	return token, ca, nil
}

// dryRun prints what join would apply, with the token and the secret access key left out.
func (o Options) dryRun(managedObjs []*unstructured.Unstructured, hubNS bool) error {
	placeholder := fmt.Sprintf("<the token of Secret %s/%s on %s>", o.Namespace, TokenSecretName, o.Name)
	kubeconfig, err := o.hubKubeconfig([]byte(placeholder), nil)
	if err != nil {
		return err
	}
	hubObjs, err := o.hubObjects(kubeconfig)
	if err != nil {
		return err
	}
	if !hubNS {
		hubObjs = prepend(namespace(o.Namespace), hubObjs)
	}
	fmt.Fprintf(o.Out, "# drover cluster join %s --dry-run: nothing was changed; these objects would be applied.\n", o.Name)
	if err := printYAML(o.Out, "on managed cluster "+o.Name+" at "+o.Managed.Config.Host, redacted(managedObjs)); err != nil {
		return err
	}
	return printYAML(o.Out, "on the hub at "+o.Hub.Config.Host, redacted(hubObjs))
}

// redacted shows Secrets with readable stringData and no secret access key or store key.
func redacted(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		if obj.GetKind() != "Secret" {
			out = append(out, obj)
			continue
		}
		shown := obj.DeepCopy()
		secret := &corev1.Secret{}
		if err := runtimeFromUnstructured(obj, secret); err == nil && len(secret.Data) > 0 {
			data := map[string]any{}
			for k, v := range secret.Data {
				data[k] = string(v)
			}
			for _, k := range []string{secretAccessKeyKey, objectstore.SecretStoreKeysKey} {
				if _, ok := data[k]; ok {
					data[k] = "<redacted>"
				}
			}
			unstructured.RemoveNestedField(shown.Object, "data")
			shown.Object["stringData"] = data
		}
		out = append(out, shown)
	}
	return out
}
