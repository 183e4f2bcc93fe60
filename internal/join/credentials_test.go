package join_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/drover-io/drover/internal/join"
)

func TestReadS3CredentialsReadsTheFilesUsersHave(t *testing.T) {
	cases := []struct {
		name, file, wantErr string
	}{
		{name: "an AWS credentials file takes the default profile", file: "[other]\naws_access_key_id = NO\naws_secret_access_key = NO\n[default]\naws_access_key_id = AKID\naws_secret_access_key = SECRET\n"},
		{name: "an environment file with export and quotes", file: "# lab\nexport AWS_ACCESS_KEY_ID=\"AKID\"\nAWS_SECRET_ACCESS_KEY='SECRET'\n"},
		{name: "a file without the secret says what it needs", file: "AWS_ACCESS_KEY_ID=AKID\n", wantErr: "has no aws_access_key_id and aws_secret_access_key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "credentials")
			if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			id, secret, err := join.ReadS3Credentials(path)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("read %q, %q; want an error", id, secret)
				}
				mustContain(t, err.Error(), tc.wantErr)
				return
			}
			if err != nil || id != "AKID" || secret != "SECRET" {
				t.Errorf("read %q, %q, %v; want AKID, SECRET", id, secret, err)
			}
		})
	}
}
