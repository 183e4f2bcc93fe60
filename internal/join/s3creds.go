package join

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/drover-io/drover/internal/objectstore"
)

// Rotating an S3 profile's credentials (docs/security.md, "Rotating the S3 credentials"). Every
// copy of the profile's Secret holds the access key the agents sign their requests with: one on
// every joined cluster and the hub's, which later joins copy. The store's administrator makes
// the new access key first (both work for a while); RotateS3Credentials checks that the store
// accepts it, writes it into every copy, the hub's last, and says to revoke the old one at the
// store. The agents need no restart: an agent rebuilds its store when the Secret's
// resourceVersion changes.

// S3CredentialOptions are the inputs of RotateS3Credentials.
type S3CredentialOptions struct {
	RotateOptions
	// AccessKeyID and SecretAccessKey are the new credentials.
	AccessKeyID, SecretAccessKey string
	// DryRun checks the copies and the new credentials, prints what would change, and writes
	// nothing.
	DryRun bool
}

// checkS3Prefix is the prefix the check of new credentials lists: one request, whatever the
// bucket holds.
const checkS3Prefix = "drover-credential-check/"

// RotateS3Credentials writes new S3 credentials into every copy of the profile's Secret: it
// refuses when a copy cannot be read (a cluster left with the old key would fail once it is
// revoked), or when the store refuses the new key (nothing is written then); it writes the
// managed clusters' copies first, then the hub's, each conditional on what it read.
func RotateS3Credentials(ctx context.Context, opts S3CredentialOptions) error {
	if opts.AccessKeyID == "" || opts.SecretAccessKey == "" {
		return errors.New("no new S3 credentials: pass --s3-access-key-id with --s3-secret-access-key-file, or --s3-credentials-file, or set $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY")
	}
	o, copies, err := opts.open(ctx)
	if err != nil {
		return err
	}
	opts.RotateOptions = o
	if len(copies.failed) > 0 {
		return fmt.Errorf("cannot rotate the credentials of S3 profile %s: the copies of its Secret on these clusters could not be read, and their agents would fail once the old key is revoked:\n%s\n"+
			"make them reachable, or unjoin a cluster that is gone for good, and run again", o.Profile, failedClusters(copies.failed))
	}
	if err := opts.checkStore(ctx, copies.hub); err != nil {
		return err
	}
	all := append(slices.Clone(copies.managed), copies.hub)
	old := string(copies.hub.secret.Data[objectstore.SecretAccessKeyIDKey])
	for _, c := range all {
		fmt.Fprintf(o.Out, "%s: Secret %s/%s: access key %s -> %s\n", c.where(), o.Namespace, o.Profile,
			string(c.secret.Data[objectstore.SecretAccessKeyIDKey]), opts.AccessKeyID)
	}
	for _, name := range copies.without {
		fmt.Fprintf(o.Out, "managed cluster %s: holds no Secret %s/%s: skipped\n", name, o.Namespace, o.Profile)
	}
	if opts.DryRun {
		fmt.Fprintf(o.Out, "Dry run: the store accepts the new access key; nothing was written\n")
		return nil
	}
	for _, c := range all {
		if err := opts.writeCredentials(ctx, c); err != nil {
			return fmt.Errorf("%w\nthe copies written before this one hold the new access key %s, the others the old one %s: both work until you revoke the old one; run the command again",
				err, opts.AccessKeyID, old)
		}
	}
	fmt.Fprintf(o.Out, "S3 profile %s's %d copies hold access key %s. Each agent reads it at its next pass; once `drover validate clusters` passes, "+
		"revoke access key %s at the store\n", o.Profile, len(all), opts.AccessKeyID, old)
	return nil
}

// checkStore lists a prefix of the profile's bucket with the new credentials: a key the store
// refuses is never written.
func (o S3CredentialOptions) checkStore(ctx context.Context, hubCopy *profileCopy) error {
	p, err := objectstore.ProfileFromSecret(o.Profile, hubCopy.secret)
	if err != nil {
		return fmt.Errorf("the hub's copy of S3 profile %s's Secret does not describe the store: %w", o.Profile, err)
	}
	p.AccessKeyID, p.SecretAccessKey = o.AccessKeyID, o.SecretAccessKey
	store, err := objectstore.NewS3(p)
	if err == nil {
		_, err = store.List(ctx, checkS3Prefix)
	}
	if err != nil {
		return fmt.Errorf("the store of S3 profile %s (bucket %s at %s) refuses the new access key %s, so nothing was written: %w; "+
			"create it at the store, with access to the bucket, before rotating", o.Profile, p.Bucket, p.Endpoint, o.AccessKeyID, err)
	}
	return nil
}

// writeCredentials writes the new credentials into one copy, conditional on what it read.
func (o S3CredentialOptions) writeCredentials(ctx context.Context, c *profileCopy) error {
	fresh, err := o.readCopy(ctx, c.t)
	if err != nil {
		return err
	}
	after := fresh.secret.DeepCopy()
	after.Data[objectstore.SecretAccessKeyIDKey] = []byte(o.AccessKeyID)
	after.Data[objectstore.SecretSecretAccessKeyKey] = []byte(o.SecretAccessKey)
	state := "written"
	if string(fresh.secret.Data[objectstore.SecretAccessKeyIDKey]) == o.AccessKeyID &&
		string(fresh.secret.Data[objectstore.SecretSecretAccessKeyKey]) == o.SecretAccessKey {
		state = "already held"
	} else if err := o.patchCopy(ctx, c, fresh, after); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "%s: Secret %s/%s holds access key %s (%s)\n", c.where(), o.Namespace, o.Profile, o.AccessKeyID, state)
	return nil
}
