package join

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/drover-io/drover/internal/objectstore"
)

// Join registers the managed cluster o.Managed with the hub o.Hub as the DRCluster o.Name. It
// checks everything first, then applies on the managed cluster the hub's identity, the Secret
// its token is bound to and the S3 credentials, requests an expiring token (or keeps the one
// the hub holds while it is valid), and applies on the hub the kubeconfig Secret, the profile's
// Secret and the DRCluster. It is idempotent: joining again with the same inputs changes
// nothing. When a write fails, it deletes what this run created and says so.
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
	peers, err := o.joinedPeers(ctx, hub)
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
	if err := replaceLegacyToken(ctx, o, managed); err != nil {
		return err
	}
	for _, obj := range managedObjs {
		if err := r.apply(ctx, managed, obj); err != nil {
			return r.undo(ctx, err)
		}
	}
	if err := o.applyHub(ctx, r, hub, managed, hubNS); err != nil {
		return r.undo(ctx, err)
	}
	o.shareProfile(ctx, peers)
	o.printPolicyHint()
	return nil
}

// applyHub obtains the hub's token, waits until the managed cluster bounds it, and applies the
// hub's objects.
func (o Options) applyHub(ctx context.Context, r *run, hub, managed *target, hubNS bool) error {
	token, ca, err := o.hubToken(ctx, hub, managed)
	if err != nil {
		return err
	}
	kubeconfig, err := o.hubKubeconfig([]byte(token), ca)
	if err != nil {
		return err
	}
	if err := o.awaitCredentialBounds(ctx, managed, kubeconfig); err != nil {
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

// dryRun prints what join would apply, with the token and the secret access key left out.
func (o Options) dryRun(managedObjs []*unstructured.Unstructured, hubNS bool) error {
	placeholder := fmt.Sprintf("<a token of ServiceAccount %s/%s on %s, bound to Secret %s, expiring after %s>",
		o.Namespace, ServiceAccountName, o.Name, TokenSecretName, o.TokenLifetime)
	ca, err := configCA(o.Managed.Config)
	if err != nil {
		return err
	}
	kubeconfig, err := o.hubKubeconfig([]byte(placeholder), ca)
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
