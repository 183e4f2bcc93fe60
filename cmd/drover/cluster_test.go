package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/drover-io/drover/internal/join"
)

func TestJoinTakesS3CredentialsFromFlagsThenTheFileThenTheEnvironment(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "ENV-ID")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "ENV-SECRET")
	file := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(file, []byte("[default]\naws_access_key_id=FILE-ID\naws_secret_access_key=FILE-SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, flagID, flagSecret, file, wantID, wantSecret string
	}{
		{name: "flags win", flagID: "FLAG-ID", flagSecret: "FLAG-SECRET", file: file, wantID: "FLAG-ID", wantSecret: "FLAG-SECRET"},
		{name: "the file comes next", file: file, wantID: "FILE-ID", wantSecret: "FILE-SECRET"},
		{name: "the environment last", wantID: "ENV-ID", wantSecret: "ENV-SECRET"},
		{name: "the environment fills what the flags lack", flagID: "FLAG-ID", wantID: "FLAG-ID", wantSecret: "ENV-SECRET"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := join.Options{}
			o.S3.AccessKeyID, o.S3.SecretAccessKey = tc.flagID, tc.flagSecret
			if err := s3Credentials(&o, tc.file); err != nil {
				t.Fatal(err)
			}
			if o.S3.AccessKeyID != tc.wantID || o.S3.SecretAccessKey != tc.wantSecret {
				t.Errorf("got %q/%q, want %q/%q", o.S3.AccessKeyID, o.S3.SecretAccessKey, tc.wantID, tc.wantSecret)
			}
		})
	}
}

func TestClusterJoinNeedsTheManagedClustersKubeconfig(t *testing.T) {
	root := newRootCommand()
	root.SetArgs([]string{"cluster", "join", "east", "--s3-endpoint", "http://127.0.0.1:9000"})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	err := root.Execute()
	if err == nil || err.Error() != `required flag(s) "cluster-kubeconfig" not set` {
		t.Errorf("join without --cluster-kubeconfig returned %v", err)
	}
}
