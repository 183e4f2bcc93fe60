package join_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/drover-io/drover/internal/join"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/modroot"
	"github.com/drover-io/drover/internal/objectstore"
)

// versitygwAdmin runs an admin command of the lab's S3 server of east (versitygw), as the
// store's administrator: its root credentials.
func versitygwAdmin(t *testing.T, args ...string) {
	t.Helper()
	root, err := modroot.Find()
	if err != nil {
		t.Fatal(err)
	}
	profiles, err := testLab.S3Profiles()
	if err != nil {
		t.Fatal(err)
	}
	p := profiles[0]
	full := append([]string{"admin", "--access", p.AccessKeyID, "--secret", p.SecretAccessKey, "--endpoint-url", p.Endpoint}, args...)
	out, err := exec.CommandContext(context.Background(), filepath.Join(root, "bin", "versitygw"), full...).CombinedOutput() //nolint:gosec // the lab's binary
	if err != nil {
		t.Fatalf("versitygw admin %v: %v\n%s", args, err, out)
	}
}

// An S3 profile's credentials are in every copy of its Secret, on every joined cluster and the
// hub: a key leaked with one of them stays valid until it is replaced everywhere and revoked.
// rotate-s3-credentials replaces it in every copy, but only with a key the store accepts: a key
// the store refuses (a typo, a key not created yet) writes nothing, since every agent would then
// fail at once; --dry-run writes nothing either.
func TestAnS3ProfilesCredentialsAreReplacedInEveryCopyOnlyByAKeyTheStoreAccepts(t *testing.T) {
	joinOnEastsStore(t)
	profile := profileName(lab.East)
	const newID, newSecret = "DROVERROTATED01", "the-new-secret-access-key-4f2a9c"
	versitygwAdmin(t, "create-user", "--access", newID, "--secret", newSecret, "--role", "admin")
	t.Cleanup(func() { versitygwAdmin(t, "delete-user", "--access", newID) })
	oldID := string(getSecret(t, lab.Hub, profile).Data[objectstore.SecretAccessKeyIDKey])
	held := func() map[string]string {
		out := map[string]string{}
		for _, c := range []string{lab.Hub, lab.East, lab.West} {
			s := getSecret(t, c, profile)
			out[c] = string(s.Data[objectstore.SecretAccessKeyIDKey]) + "/" + string(s.Data[objectstore.SecretSecretAccessKeyKey])
		}
		return out
	}
	before := held()

	var out bytes.Buffer
	o := join.S3CredentialOptions{RotateOptions: rotateOptions(t, profile, &out), AccessKeyID: "NOSUCHKEY", SecretAccessKey: "wrong-secret-key-0000"}
	err := join.RotateS3Credentials(t.Context(), o)
	t.Logf("a key the store refuses: %v\n%s", err, out.String())
	mustContain(t, errString(err), "refuses the new access key NOSUCHKEY, so nothing was written")
	o.AccessKeyID, o.SecretAccessKey, o.DryRun = newID, newSecret, true
	out.Reset()
	if err := join.RotateS3Credentials(t.Context(), o); err != nil {
		t.Fatalf("the dry run failed: %v\n%s", err, out.String())
	}
	mustContain(t, out.String(), "managed cluster west: Secret drover-system/store-east: access key "+oldID+" -> "+newID, "nothing was written")
	for c, v := range held() {
		if v != before[c] {
			t.Errorf("a refused rotation or a dry run changed the copy on %s", c)
		}
	}

	o.DryRun = false
	out.Reset()
	if err := join.RotateS3Credentials(t.Context(), o); err != nil {
		t.Fatalf("the rotation failed: %v\n%s", err, out.String())
	}
	t.Logf("rotate-s3-credentials:\n%s", out.String())
	mustContain(t, out.String(), "the hub: Secret drover-system/store-east holds access key "+newID+" (written)", "revoke access key "+oldID+" at the store")
	for c, v := range held() {
		if v != newID+"/"+newSecret {
			t.Errorf("after the rotation the copy on %s holds %s", c, v)
		}
	}
	// An agent builds its store from its copy: the new key reads the bucket.
	if _, err := storeOf(t, lab.West, profile).List(t.Context(), "drover-credential-check/"); err != nil {
		t.Errorf("west's copy does not reach the store: %v", err)
	}
}
