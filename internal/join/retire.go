package join

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/drover-io/drover/internal/objectstore"
)

// RetireStoreKey removes key id from every copy of the S3 profile o.Profile's Secret. It
// refuses while id is the current key of any copy, or the key a rotation is making current.
// An object sealed with a retired key can no longer be opened, by any agent: unless o.Force, it
// first reads every object of the profile's store, with the profile's credentials from the
// hub's copy, and refuses while one is sealed with id (its envelope names the key in clear), or
// when the store cannot be read from here, or when a cluster's copy cannot be read. Removing a
// key no copy holds is no error, so a run that failed half-way is finished by running it again.
func RetireStoreKey(ctx context.Context, opts RotateOptions, id string) error {
	o, copies, err := opts.open(ctx)
	if err != nil {
		return err
	}
	all := append([]*profileCopy{copies.hub}, copies.managed...)
	if done, err := o.retirable(copies, all, id); done || err != nil {
		return err
	}
	if !o.Force {
		if err := o.checkStore(ctx, copies.hub, id); err != nil {
			return err
		}
	}
	// The managed clusters' copies first, the hub's last: a join copies the hub's keys.
	for _, c := range copies.managed {
		if err := o.removeKey(ctx, c, id); err != nil {
			copies.failed[c.cluster] = err
		}
	}
	if err := o.removeKey(ctx, copies.hub, id); err != nil {
		return err
	}
	if len(copies.failed) > 0 {
		return fmt.Errorf("key %s of S3 profile %s is retired everywhere but on these clusters, whose copy could not be written:\n%s\n"+
			"they still open what it sealed, which is harmless; run the command again when they can be reached", id, o.Profile, failedClusters(copies.failed))
	}
	fmt.Fprintf(o.Out, "Key %s of S3 profile %s is retired: no copy of its Secret holds it\n", id, o.Profile)
	return nil
}

// removeKey removes key id from a copy, and says so when it held it.
func (o RotateOptions) removeKey(ctx context.Context, c *profileCopy, id string) error {
	remove := func(k objectstore.Keyring) (objectstore.Keyring, error) { return k.Without(id) }
	_, wrote, err := o.write(ctx, c, remove, nil)
	if wrote {
		fmt.Fprintf(o.Out, "%s: Secret %s/%s no longer holds key %s\n", c.where(), o.Namespace, o.Profile, id)
	}
	return err
}

// retirable refuses to retire id while a copy seals with it or a rotation is making it current;
// done is true when every copy was read and none holds it: there is nothing to do.
func (o RotateOptions) retirable(copies *profileCopies, all []*profileCopy, id string) (done bool, err error) {
	if id == "" {
		return false, errors.New("no key to retire: pass --retire KEYID, one of the older keys listed by the rotation")
	}
	if copies.hub.secret.Annotations[AnnotationRotating] == id {
		return false, fmt.Errorf("key %s is the key a rotation of S3 profile %s is making current: run `drover cluster rotate-store-key --profile %s` to finish it; retire only an older key",
			id, o.Profile, o.Profile)
	}
	if len(copies.failed) > 0 {
		return false, fmt.Errorf("cannot retire key %s of S3 profile %s: the copies of its Secret on these clusters could not be read, so nothing shows they do not seal with it:\n%s\n"+
			"make them reachable, or unjoin a cluster that is gone for good, and run again", id, o.Profile, failedClusters(copies.failed))
	}
	var current, holding []string
	for _, c := range all {
		if c.keys.Current == id {
			current = append(current, c.where())
		}
		if c.keys.Has(id) {
			holding = append(holding, c.where())
		}
	}
	if len(current) > 0 {
		return false, fmt.Errorf("key %s is the current key of S3 profile %s on %s, which seals every new object with it: rotate first "+
			"(`drover cluster rotate-store-key --profile %s`), then retire it", id, o.Profile, strings.Join(current, ", "), o.Profile)
	}
	if len(holding) == 0 {
		fmt.Fprintf(o.Out, "No copy of S3 profile %s's Secret holds key %s (the hub's holds %s): nothing to retire\n", o.Profile, id, strings.Join(copies.hub.keys.IDs(), ", "))
		return true, nil
	}
	return false, nil
}

// checkStore reads every object of the profile's store and refuses while one is sealed with id,
// naming the groups that still hold such objects; it refuses too when the store cannot be read
// from here, since nothing then shows that no object needs the key.
func (o RotateOptions) checkStore(ctx context.Context, hubCopy *profileCopy, id string) error {
	p, err := objectstore.ProfileFromSecret(o.Profile, hubCopy.secret)
	if err != nil {
		return fmt.Errorf("cannot check the store of S3 profile %s for objects sealed with key %s: the hub's copy of its Secret does not describe it (%w); "+
			"pass --force once you know every object was rewritten under the current key", o.Profile, id, err)
	}
	unreadable := func(err error) error {
		return fmt.Errorf("cannot check that no object of S3 profile %s (bucket %s at %s) is still sealed with key %s: %w\n"+
			"This command reads the store with the credentials of the hub's copy of the profile's Secret. Run it where the store can be reached, "+
			"or pass --force once you know every object was rewritten (each group's primary rewrites its objects at its first pass after the rotation)",
			o.Profile, p.Bucket, p.Endpoint, id, err)
	}
	p.Limits.MaxKeys = checkMaxKeys
	store, err := objectstore.NewS3(p)
	if err != nil {
		return unreadable(err)
	}
	keys, err := store.List(ctx, "")
	if err != nil {
		return unreadable(err)
	}
	byGroup, others := map[string]int{}, 0
	for _, key := range keys {
		raw, err := store.Get(ctx, key)
		if err != nil {
			return unreadable(err)
		}
		if sealedWith, err := objectstore.EnvelopeKeyID(raw); err == nil && sealedWith == id {
			byGroup[groupOf(key)]++
		} else {
			others++
		}
	}
	if len(byGroup) == 0 {
		fmt.Fprintf(o.Out, "Read the %d objects of bucket %s at %s: none is sealed with key %s\n", len(keys), p.Bucket, p.Endpoint, id)
		return nil
	}
	var groups []string
	for _, g := range slices.Sorted(maps.Keys(byGroup)) {
		groups = append(groups, fmt.Sprintf("%s (%d)", g, byGroup[g]))
	}
	return fmt.Errorf("refusing to retire key %s of S3 profile %s: %d of the %d objects in bucket %s at %s are still sealed with it, and would no longer open; "+
		"by group (namespace/name): %s.\nA group's primary rewrites its objects under the current key at its first pass after its agent reads that key; "+
		"a group whose primary does not run (its cluster down, the group being deleted) keeps them. Run again once those groups report Protected, "+
		"or pass --force to retire the key anyway", id, o.Profile, len(keys)-others, len(keys), p.Bucket, p.Endpoint, strings.Join(groups, ", "))
}

// checkMaxKeys bounds the listing of a store checked before a retirement: the whole bucket, far
// more keys than one group's listing (objectstore.DefaultMaxKeys).
const checkMaxKeys = 1 << 20

// groupOf is the group of a store object: the first two parts of its key, <namespace>/<name>.
func groupOf(key string) string {
	parts := strings.SplitN(key, "/", 3)
	if len(parts) < 3 {
		return key
	}
	return parts[0] + "/" + parts[1]
}
