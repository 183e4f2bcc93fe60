package join

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/objectstore"
)

// Rotating an S3 profile's store key (docs/security.md, "Rotating a key"). Every copy of the
// profile's Secret holds the keys: one on every joined cluster whose agent reads the profile,
// and the hub's, which later joins copy. A key that seals must be held by every copy first, or
// an agent would meet an object sealed with a key it lacks and refuse it. So a rotation is two
// steps, each over every copy: add the new key as a reader only, then, once every copy holds
// it, make it current. The hub's copy records the key being rotated to (AnnotationRotating)
// from the first step until the last, so a run that stopped half-way (a cluster unreachable)
// is finished by the next run, with the same key, rather than begun again with a third one.

// AnnotationRotating names, on the hub's copy of a profile's Secret, the key a rotation added
// and has not yet made current everywhere.
const AnnotationRotating = "drover.io/store-key-rotating"

// RotateOptions are the inputs of RotateStoreKey and RetireStoreKey.
type RotateOptions struct {
	// Profile is the S3 profile, the name of its credentials Secret.
	Profile string
	// Hub is the hub cluster.
	Hub Cluster
	// Clusters are the joined clusters, by DRCluster name, each reached with a kubeconfig of the
	// operator's (--cluster-kubeconfig NAME=FILE), as join reaches the clusters joined before: a
	// run refuses before writing anything when a DRCluster has none. The hub's credential on
	// them may not read or write Secrets.
	Clusters map[string]Cluster
	// Namespace holds the profile's Secrets on every cluster; empty means DefaultNamespace.
	Namespace string
	// Force (RetireStoreKey) retires the key without checking that no object in the store is
	// still sealed with it.
	Force bool
	// AllowInsecureKubeconfig lets the hub's and the clusters' kubeconfigs skip TLS
	// verification, which join refuses too: the store keys cross those connections.
	AllowInsecureKubeconfig bool
	// Out receives the progress; nil means os.Stdout.
	Out io.Writer
}

func (o RotateOptions) complete() (RotateOptions, error) {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	switch {
	case o.Profile == "":
		return o, errors.New("no S3 profile: pass --profile, the name of the profile's credentials Secret")
	case o.Hub.Config == nil:
		return o, errors.New("no kubeconfig for the hub cluster: pass --kubeconfig or set KUBECONFIG")
	case o.Hub.Config.Insecure && !o.AllowInsecureKubeconfig:
		return o, fmt.Errorf("%s sets insecure-skip-tls-verify: anyone on the path to the hub could read the store keys this command writes there; "+
			"give it the hub's CA (certificate-authority-data), or pass --allow-insecure-kubeconfig", o.Hub.Source)
	}
	if problems := insecurePeers(o.Clusters, ClusterKubeconfigFlag, o.AllowInsecureKubeconfig); len(problems) > 0 {
		return o, errors.New(strings.Join(problems, "\n"))
	}
	return o, nil
}

// profileCopy is one copy of the profile's Secret: where it is, as read, and its keys.
type profileCopy struct {
	// cluster is the DRCluster's name; "" for the hub's copy.
	cluster string
	t       *target
	secret  *corev1.Secret
	keys    objectstore.Keyring
}

// where names the copy in messages.
func (c *profileCopy) where() string { return c.t.role }

// profileCopies are the copies of a profile's Secret that a run found.
type profileCopies struct {
	hub *profileCopy
	// managed are the copies on the joined clusters, by cluster name.
	managed []*profileCopy
	// failed are the clusters whose copy could not be read, with why.
	failed map[string]error
	// without are the clusters that hold no copy: their agent cannot use the profile at all.
	without []string
}

// open completes the options, reaches the hub and reads every copy of the profile's Secret:
// what a rotation and a retirement both start from.
func (o RotateOptions) open(ctx context.Context) (RotateOptions, *profileCopies, error) {
	o, err := o.complete()
	if err != nil {
		return o, nil, err
	}
	hub, err := newTarget("the hub", o.Hub)
	if err != nil {
		return o, nil, err
	}
	copies, err := o.readCopies(ctx, hub)
	return o, copies, err
}

// readCopies reads the hub's copy of the profile's Secret and the copy on every DRCluster.
func (o RotateOptions) readCopies(ctx context.Context, hub *target) (*profileCopies, error) {
	hubCopy, err := o.readCopy(ctx, hub)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("the hub holds no Secret %s/%s of S3 profile %s: only a profile joined with `drover cluster join` has copies "+
			"drover can rotate; the hub's copies are listed by `kubectl -n %s get secrets -l %s`", o.Namespace, o.Profile, o.Profile, o.Namespace, LabelS3Profile)
	}
	if err != nil {
		return nil, err
	}
	names, err := o.joinedClusters(ctx, hub)
	if err != nil {
		return nil, err
	}
	out := &profileCopies{hub: hubCopy, failed: map[string]error{}}
	for _, name := range names {
		peer, err := peerTarget(ctx, name, o.Clusters[name], o.Namespace, ClusterKubeconfigFlag, o.AllowInsecureKubeconfig)
		if err != nil {
			out.failed[name] = err
			continue
		}
		c, err := o.readCopy(ctx, peer)
		if c != nil {
			c.cluster = name
		}
		switch {
		case apierrors.IsNotFound(err):
			out.without = append(out.without, name)
		case err != nil:
			out.failed[name] = err
		default:
			out.managed = append(out.managed, c)
		}
	}
	return out, nil
}

// joinedClusters are the names of every DRCluster of the hub, each of which may hold a copy of
// the profile's Secret: it refuses, before anything is written, when the operator gave no
// kubeconfig for one of them.
func (o RotateOptions) joinedClusters(ctx context.Context, hub *target) ([]string, error) {
	list := &v1alpha1.DRClusterList{}
	if err := hub.cl.List(ctx, list); err != nil {
		return nil, fmt.Errorf("failed to list the DRClusters on the hub: %w", hub.explain(err))
	}
	names := make([]string, 0, len(list.Items))
	for i := range list.Items {
		names = append(names, list.Items[i].Name)
	}
	slices.Sort(names)
	why := fmt.Sprintf("this command reads and rewrites the copy of S3 profile %s's Secret on every joined cluster", o.Profile)
	if err := missingKubeconfigs(o.Out, names, o.Clusters, ClusterKubeconfigFlag, why); err != nil {
		return nil, err
	}
	return names, nil
}

// readCopy reads the profile's Secret on t and its keys. A missing Secret is the API's
// NotFound error, as it is.
func (o RotateOptions) readCopy(ctx context.Context, t *target) (*profileCopy, error) {
	secret := &corev1.Secret{}
	if err := t.cl.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Profile}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, err
		}
		return nil, fmt.Errorf("failed to get Secret %s/%s on %s: %w", o.Namespace, o.Profile, t.role, t.explain(err))
	}
	ref := fmt.Sprintf("Secret %s/%s on %s", o.Namespace, o.Profile, t.role)
	if len(secret.Data[objectstore.SecretStoreKeysKey]) == 0 {
		return nil, fmt.Errorf("%s holds no store keys: run `drover cluster join` again for a cluster of this profile, which adds them", ref)
	}
	keys, err := objectstore.ParseKeyring(string(secret.Data[objectstore.SecretStoreKeysKey]), string(secret.Data[objectstore.SecretStoreKeyIDKey]), ref)
	if err != nil {
		return nil, fmt.Errorf("%s holds store keys that cannot be read: %w", ref, err)
	}
	return &profileCopy{t: t, secret: secret, keys: keys}, nil
}

// write applies edit to the keys of the copy, read again now, and on the hub's copy names
// rotating in AnnotationRotating ("" removes it). It writes nothing when the edit changes
// nothing, and returns the keys before the edit and whether it wrote. Reading the copy again
// makes every edit apply to what the Secret holds (a cluster whose copy is the hub's own, an
// edit by another run); the patch is conditional on that read, so a Secret changed in between
// is not overwritten.
func (o RotateOptions) write(ctx context.Context, c *profileCopy, edit func(objectstore.Keyring) (objectstore.Keyring, error), rotating *string) (objectstore.Keyring, bool, error) {
	fresh, err := o.readCopy(ctx, c.t)
	if apierrors.IsNotFound(err) {
		return objectstore.Keyring{}, false, fmt.Errorf("the Secret %s/%s on %s was deleted while it was being written: run the command again", o.Namespace, o.Profile, c.where())
	}
	if err != nil {
		return objectstore.Keyring{}, false, err
	}
	c.secret, c.keys = fresh.secret, fresh.keys
	keys, err := edit(fresh.keys)
	if err != nil {
		return fresh.keys, false, err
	}
	after := fresh.secret.DeepCopy()
	maps.Copy(after.Data, keys.SecretData())
	if rotating != nil {
		if *rotating == "" {
			delete(after.Annotations, AnnotationRotating)
		} else {
			if after.Annotations == nil {
				after.Annotations = map[string]string{}
			}
			after.Annotations[AnnotationRotating] = *rotating
		}
	}
	if maps.EqualFunc(after.Data, fresh.secret.Data, slices.Equal) && maps.Equal(after.Annotations, fresh.secret.Annotations) {
		return fresh.keys, false, nil
	}
	if err := o.patchCopy(ctx, c, fresh, after); err != nil {
		return fresh.keys, false, err
	}
	c.secret, c.keys = after, keys
	return fresh.keys, true, nil
}

// patchCopy writes after over the copy fresh read, conditional on that read (a Secret changed
// in between is not overwritten).
func (o RotateOptions) patchCopy(ctx context.Context, c *profileCopy, fresh *profileCopy, after *corev1.Secret) error {
	patch := client.MergeFromWithOptions(fresh.secret, client.MergeFromWithOptimisticLock{})
	if err := c.t.cl.Patch(ctx, after, patch, client.FieldOwner(FieldOwner)); err != nil {
		if apierrors.IsConflict(err) {
			return fmt.Errorf("the Secret %s/%s on %s changed while it was being written (another rotation, or a join): run the command again",
				o.Namespace, o.Profile, c.where())
		}
		return fmt.Errorf("failed to write Secret %s/%s on %s: %w", o.Namespace, o.Profile, c.where(), c.t.explain(err))
	}
	return nil
}

// failedClusters says which clusters failed and why, one per line, sorted.
func failedClusters(failed map[string]error) string {
	var lines []string
	for _, name := range slices.Sorted(maps.Keys(failed)) {
		lines = append(lines, fmt.Sprintf("  cluster %s: %v", name, failed[name]))
	}
	return strings.Join(lines, "\n")
}

// RotateStoreKey rotates the store key of the S3 profile o.Profile: it makes a key (32 bytes
// of crypto/rand, a new key ID), adds it, not current, to the hub's copy of the profile's
// Secret and to the copy on every joined cluster, and only when every copy holds it makes it
// current everywhere, the hub's copy last. A run that could not reach a cluster stops before
// the second step and says so: the copies written hold the new key as a reader only, which
// changes nothing for the agents; running it again finishes the rotation with the same key.
// The older keys stay: they open what they sealed until RetireStoreKey removes them.
func RotateStoreKey(ctx context.Context, opts RotateOptions) error {
	o, copies, err := opts.open(ctx)
	if err != nil {
		return err
	}
	id, err := o.beginRotation(ctx, copies.hub)
	if err != nil {
		return err
	}
	for _, c := range copies.managed {
		if err := o.addKey(ctx, c, copies.hub.keys, id); err != nil {
			copies.failed[c.cluster] = err
		}
	}
	for _, name := range copies.without {
		fmt.Fprintf(o.Out, "managed cluster %s: holds no Secret %s/%s, so its agent does not use the profile: skipped (`drover cluster join %s` copies it there, with the keys)\n",
			name, o.Namespace, o.Profile, name)
	}
	if len(copies.failed) > 0 {
		return fmt.Errorf("the rotation of S3 profile %s's store key to %s stopped before making it current, because these clusters could not be given the key:\n%s\n"+
			"The copies already written hold key %s as a reader only, which is harmless: every agent still seals with the current key. "+
			"Make the clusters reachable (or unjoin one that is gone for good) and run `drover cluster rotate-store-key --profile %s` again, which finishes this rotation with the same key",
			o.Profile, id, failedClusters(copies.failed), id, o.Profile)
	}
	return o.commitRotation(ctx, copies, id)
}

// beginRotation returns the key being rotated to: the one the hub's copy names in
// AnnotationRotating (a run that stopped half-way), else a new one, which it adds, not
// current, to the hub's copy first, naming it there.
func (o RotateOptions) beginRotation(ctx context.Context, hubCopy *profileCopy) (string, error) {
	if id := hubCopy.secret.Annotations[AnnotationRotating]; id != "" {
		if !hubCopy.keys.Has(id) {
			return "", fmt.Errorf("the hub's copy of Secret %s/%s names key %s in annotation %s but does not hold it: remove the annotation "+
				"(kubectl -n %s annotate secret %s %s-) and run again, which begins a new rotation", o.Namespace, o.Profile, id, AnnotationRotating,
				o.Namespace, o.Profile, AnnotationRotating)
		}
		fmt.Fprintf(o.Out, "Finishing the rotation of S3 profile %s's store key to %s, begun by an earlier run (current key on the hub's copy: %s)\n",
			o.Profile, id, hubCopy.keys.Current)
		return id, nil
	}
	made, id := hubCopy.keys.WithNewKey()
	fmt.Fprintf(o.Out, "Rotating S3 profile %s's store key from %s to a new key %s\n", o.Profile, hubCopy.keys.Current, id)
	add := func(k objectstore.Keyring) (objectstore.Keyring, error) { return k.WithKeyOf(made, id) }
	if _, _, err := o.write(ctx, hubCopy, add, &id); err != nil {
		return "", err
	}
	fmt.Fprintf(o.Out, "%s: Secret %s/%s holds key %s (not current yet)\n", hubCopy.where(), o.Namespace, o.Profile, id)
	return id, nil
}

// addKey adds key id of from to a managed cluster's copy, not current.
func (o RotateOptions) addKey(ctx context.Context, c *profileCopy, from objectstore.Keyring, id string) error {
	add := func(k objectstore.Keyring) (objectstore.Keyring, error) {
		keys, err := k.WithKeyOf(from, id)
		if err != nil {
			return keys, fmt.Errorf("%w: fix that copy by hand (docs/security.md, \"Rotating a key\")", err)
		}
		return keys, nil
	}
	_, wrote, err := o.write(ctx, c, add, nil)
	if err != nil {
		return err
	}
	state := "already held"
	if wrote {
		state = "added"
	}
	fmt.Fprintf(o.Out, "%s: Secret %s/%s holds key %s (%s, not current yet)\n", c.where(), o.Namespace, o.Profile, id, state)
	return nil
}

// commitRotation makes key id current on every copy, which all hold it: the managed clusters'
// first, then the hub's, which stops naming it as being rotated to.
func (o RotateOptions) commitRotation(ctx context.Context, copies *profileCopies, id string) error {
	fmt.Fprintf(o.Out, "Every copy holds key %s: making it current\n", id)
	done := ""
	current := func(k objectstore.Keyring) (objectstore.Keyring, error) { return k.WithCurrent(id) }
	for _, c := range append(slices.Clone(copies.managed), copies.hub) {
		var rotating *string
		if c == copies.hub {
			rotating = &done
		}
		before, _, err := o.write(ctx, c, current, rotating)
		if err != nil {
			return fmt.Errorf("%w\nevery copy holds key %s, so the clusters where it is already current seal with it and the others read it: "+
				"run `drover cluster rotate-store-key --profile %s` again to make it current everywhere", err, id, o.Profile)
		}
		was := "was " + before.Current
		if before.Current == id {
			was = "already"
		}
		fmt.Fprintf(o.Out, "%s: Secret %s/%s seals with key %s (%s)\n", c.where(), o.Namespace, o.Profile, id, was)
	}
	older := slices.DeleteFunc(copies.hub.keys.IDs(), func(k string) bool { return k == id })
	fmt.Fprintf(o.Out, "S3 profile %s's store key is %s on the hub's copy and %d cluster(s). The older keys (%s) still open what they sealed: "+
		"each group's primary rewrites its objects under %s at its first pass after its agent reads the new key. Then retire an older key with "+
		"`drover cluster rotate-store-key --profile %s --retire KEYID`, which first checks that the store holds no object sealed with it.\n",
		o.Profile, id, len(copies.managed), strings.Join(older, ", "), id, o.Profile)
	return nil
}
