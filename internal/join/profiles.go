package join

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/objectstore"
)

// The agent of every cluster of a DRPolicy writes to every S3 profile of the policy, so each
// managed cluster needs the credentials Secret of every joined cluster's profile, under the
// name the policy's secretRef gives (the profile's name). Join keeps a copy of each profile's
// Secret on the hub, where later joins read it: the joining cluster gets the copies of the
// profiles already joined, and the clusters already joined get the new profile through a
// kubeconfig of the operator's for each (Options.Peers, peers.go).

// LabelS3Profile marks an S3 credentials Secret join wrote, with the profile's name.
const LabelS3Profile = "drover.io/s3-profile"

const secretAccessKeyKey = objectstore.SecretSecretAccessKeyKey

func runtimeFromUnstructured(u *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

// profileSecretFor is the copy of a profile's Secret kept on cluster (or on the hub, for it).
func profileSecretFor(src *corev1.Secret, profile, cluster string) (*unstructured.Unstructured, error) {
	l := labels(cluster)
	l[LabelS3Profile] = profile
	return toUnstructured(&corev1.Secret{
		TypeMeta:   metav1TypeMeta("v1", "Secret"),
		ObjectMeta: objectMeta(src.Namespace, src.Name, l),
		Type:       corev1.SecretTypeOpaque,
		Data:       src.Data,
	})
}

// otherProfiles returns, for the joining cluster, copies of the profile Secrets that the hub
// keeps for the other joined clusters.
func otherProfiles(ctx context.Context, o Options, hub *target) ([]*unstructured.Unstructured, error) {
	list := &corev1.SecretList{}
	if err := hub.cl.List(ctx, list, client.InNamespace(o.Namespace),
		client.MatchingLabels{LabelManagedBy: ManagedByValue}, client.HasLabels{LabelS3Profile}); err != nil {
		return nil, fmt.Errorf("failed to list the S3 profile Secrets on the hub: %w", hub.explain(err))
	}
	var out []*unstructured.Unstructured
	for i := range list.Items {
		s := &list.Items[i]
		if s.Labels[LabelCluster] == o.Name || s.Name == o.S3.Name {
			continue
		}
		u, err := profileSecretFor(s, s.Labels[LabelS3Profile], o.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

// joinedPeers are the clusters joined before (every DRCluster join made, but o.Name), which
// get the new profile's Secret: it refuses, before anything is written, when the operator gave
// no kubeconfig for one of them (Options.Peers).
func (o Options) joinedPeers(ctx context.Context, hub *target) ([]string, error) {
	list := &v1alpha1.DRClusterList{}
	if err := hub.cl.List(ctx, list, client.MatchingLabels{LabelManagedBy: ManagedByValue}); err != nil {
		return nil, fmt.Errorf("failed to list the joined clusters on the hub: %w", hub.explain(err))
	}
	var names []string
	for i := range list.Items {
		switch name := list.Items[i].Name; {
		case name == o.Name:
		case slices.Contains(o.Silent, name):
			fmt.Fprintf(o.Out, "note: cluster %s does not answer: it gets S3 profile %s's credentials when it is joined again\n", name, o.S3.Name)
		default:
			names = append(names, name)
		}
	}
	slices.Sort(names)
	peers := maps.Clone(o.Peers)
	delete(peers, o.Name)
	why := fmt.Sprintf("join copies S3 profile %s's credentials onto each cluster joined before", o.S3.Name)
	if err := missingKubeconfigs(o.Out, names, peers, PeerKubeconfigFlag, why); err != nil {
		return nil, err
	}
	return names, nil
}

// shareProfile copies the joined cluster's profile Secret to every cluster joined before, with
// the operator's kubeconfig for it. A cluster that cannot be reached now gets it when it is
// joined again; the report says which.
func (o Options) shareProfile(ctx context.Context, peers []string) {
	for _, name := range peers {
		if err := o.shareProfileWith(ctx, name); err != nil {
			fmt.Fprintf(o.Out, "warning: cluster %s did not get the credentials of S3 profile %s (%v): run `drover cluster join %s` again, which copies every joined profile onto it\n",
				name, o.S3.Name, err, name)
		}
	}
}

func (o Options) shareProfileWith(ctx context.Context, name string) error {
	peer, err := peerTarget(ctx, name, o.Peers[name], o.Namespace, PeerKubeconfigFlag, o.AllowInsecureKubeconfig)
	if err != nil {
		return err
	}
	u, err := profileSecretFor(s3Secret(o.S3, o.Name), o.S3.Name, name)
	if err != nil {
		return err
	}
	r := &run{out: o.Out}
	return r.apply(ctx, peer, u)
}

// printPolicyHint says what a DRPolicy that pairs the cluster must define for its profile:
// profiles are defined in DRPolicy.spec.s3Profiles, which join does not write.
func (o Options) printPolicyHint() {
	if o.NoPolicyHint {
		return
	}
	entry := []v1alpha1.S3Profile{{
		Name: o.S3.Name, Endpoint: o.S3.Endpoint, Bucket: o.S3.Bucket, Region: o.S3.Region, Insecure: o.S3.Insecure,
		SecretRef: v1alpha1.SecretRef{Namespace: o.Namespace, Name: o.S3.Name},
	}}
	raw, err := yaml.Marshal(map[string]any{"s3Profiles": entry})
	if err != nil {
		return
	}
	fmt.Fprintf(o.Out, "\nCluster %s is joined. Every DRPolicy that pairs it must define its S3 profile in spec.s3Profiles:\n%s", o.Name, raw)
}

// storeKeys are the store keys of the joining cluster's profile (objectstore.Keyring), which
// seal every object the agents write to its store: those given (the lab's), else those of the
// hub's copy of the profile's Secret (a cluster joined again keeps its keys, and the objects
// sealed with them stay readable), else a fresh key. The keys then travel with the profile's
// Secret to every joined cluster, never to the store.
func storeKeys(ctx context.Context, o Options, hub *target) (objectstore.Keyring, error) {
	if !o.S3.Keys.Empty() {
		return o.S3.Keys, nil
	}
	ref := o.S3.SecretNamespace + "/" + o.S3.SecretName
	secret := &corev1.Secret{}
	err := hub.cl.Get(ctx, client.ObjectKey{Namespace: o.S3.SecretNamespace, Name: o.S3.SecretName}, secret)
	switch {
	case apierrors.IsNotFound(err):
		return objectstore.NewKeyring("Secret " + ref), nil
	case err != nil:
		return objectstore.Keyring{}, fmt.Errorf("failed to read the hub's copy of S3 profile %s's Secret %s for its store keys: %w", o.S3.Name, ref, hub.explain(err))
	case len(secret.Data[objectstore.SecretStoreKeysKey]) == 0:
		return objectstore.NewKeyring("Secret " + ref), nil
	}
	keys, err := objectstore.ParseKeyring(string(secret.Data[objectstore.SecretStoreKeysKey]), string(secret.Data[objectstore.SecretStoreKeyIDKey]), "Secret "+ref+" on the hub")
	if err != nil {
		return objectstore.Keyring{}, fmt.Errorf("the hub's copy of S3 profile %s's Secret %s holds store keys that cannot be read: %w; fix them there (every joined cluster's copy holds the same keys)", o.S3.Name, ref, err)
	}
	return keys, nil
}
