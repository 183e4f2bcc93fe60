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
// refuses while id is the current key of any copy, or the key a rotation is making current, or
// while a cluster's copy cannot be read. An object sealed with a retired key can no longer be
// opened, by any agent: unless o.Force, it first reads every object of the profile's store,
// with the profile's credentials from the hub's copy, and reseals under the current key each
// one sealed with id (resealStore); an object whose clear header names id but that does not
// open is reported, not trusted, and does not block the retirement. It refuses when the store
// cannot be read and written from here. Removing a key no copy holds is no error, so a run that
// failed half-way is finished by running it again.
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
		if err := o.resealStore(ctx, copies.hub, id); err != nil {
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

// resealStore reads every object of the profile's store and reseals, under the current key of
// the hub's copy, each one whose envelope names key id and opens with it, so that no object
// needs id once it is retired. The envelope's header is clear text that anyone who may write to
// the bucket can forge: an object that names id but does not open is not trusted, nor
// rewritten, nor allowed to block the retirement; it is listed (it did not open before either,
// and no agent will take it). Each reseal is conditional on the version read, so an agent that
// rewrote the object meanwhile (under the current key) wins. It refuses when the store cannot
// be read or written from here: nothing then shows that no object needs the key.
func (o RotateOptions) resealStore(ctx context.Context, hubCopy *profileCopy, id string) error {
	p, err := objectstore.ProfileFromSecret(o.Profile, hubCopy.secret)
	if err != nil {
		return fmt.Errorf("cannot reseal the objects of S3 profile %s sealed with key %s: the hub's copy of its Secret does not describe the store (%w); "+
			"pass --force once you know every object was rewritten under the current key", o.Profile, id, err)
	}
	unreachable := func(err error) error {
		return fmt.Errorf("cannot reseal the objects of S3 profile %s (bucket %s at %s) still sealed with key %s: %w\n"+
			"This command reads and rewrites the store with the credentials of the hub's copy of the profile's Secret. Run it where the store can be reached, "+
			"or pass --force once you know every object was rewritten (each group's primary rewrites its objects at its first pass after the rotation)",
			o.Profile, p.Bucket, p.Endpoint, id, err)
	}
	p.Limits.MaxKeys = checkMaxKeys
	raw, err := objectstore.NewS3(p)
	if err != nil {
		return unreachable(err)
	}
	keys, err := raw.List(ctx, "")
	if err != nil {
		return unreachable(err)
	}
	sealed := objectstore.Sealed(raw, hubCopy.keys)
	resealed, refused := map[string]int{}, []string{}
	for _, key := range keys {
		done, why, err := resealOne(ctx, raw, sealed, hubCopy.keys, key, id)
		switch {
		case err != nil:
			return unreachable(err)
		case why != "":
			refused = append(refused, fmt.Sprintf("%s (%s)", key, why))
		case done:
			resealed[groupOf(key)]++
		}
	}
	o.printReseal(len(keys), p, id, hubCopy.keys.Current, resealed, refused)
	return nil
}

// printReseal says what resealStore did.
func (o RotateOptions) printReseal(total int, p objectstore.Profile, id, current string, resealed map[string]int, refused []string) {
	if len(resealed) == 0 {
		fmt.Fprintf(o.Out, "Read the %d objects of bucket %s at %s: none that opens is sealed with key %s\n", total, p.Bucket, p.Endpoint, id)
	} else {
		var groups []string
		n := 0
		for _, g := range slices.Sorted(maps.Keys(resealed)) {
			groups = append(groups, fmt.Sprintf("%s (%d)", g, resealed[g]))
			n += resealed[g]
		}
		fmt.Fprintf(o.Out, "Resealed under key %s the %d object(s) of bucket %s at %s that were sealed with key %s, by group (namespace/name): %s\n",
			current, n, p.Bucket, p.Endpoint, id, strings.Join(groups, ", "))
	}
	if len(refused) > 0 {
		fmt.Fprintf(o.Out, "warning: %d object(s) name key %s in their envelope but do not open with it, so they were not trusted, nor rewritten: %s. "+
			"Someone without the key wrote them (or altered them); no agent takes them, with or without the key. Delete them once you have looked\n",
			len(refused), id, strings.Join(refused, "; "))
	}
}

// resealTries bounds the conditional rewrites of one object that an agent keeps rewriting.
const resealTries = 3

// resealOne reseals key under the keyring's current key when its envelope names id and opens;
// done says it did, why says why an object naming id was not trusted. An object that is not an
// envelope, or names another key, is left as it is.
func resealOne(ctx context.Context, raw, sealed objectstore.Store, keys objectstore.Keyring, key, id string) (done bool, why string, err error) {
	for range resealTries {
		envelope, version, err := raw.GetVersion(ctx, key)
		if errors.Is(err, objectstore.ErrNotFound) {
			return false, "", nil
		}
		if err != nil {
			return false, "", err
		}
		if sealedWith, idErr := objectstore.EnvelopeKeyID(envelope); idErr != nil || sealedWith != id {
			return false, "", nil //nolint:nilerr // not an envelope, or another key's: not this retirement's
		}
		body, _, openErr := objectstore.Open(keys, key, envelope)
		if openErr != nil {
			return false, openErr.Error(), nil //nolint:nilerr // a forged envelope is reported, not an error of the run
		}
		err = sealed.PutIf(ctx, key, body, version)
		if errors.Is(err, objectstore.ErrPreconditionFailed) {
			continue // rewritten meanwhile: read it again
		}
		return err == nil, "", err
	}
	return false, "", fmt.Errorf("object %s changed at each of %d tries to reseal it: run the command again", key, resealTries)
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
