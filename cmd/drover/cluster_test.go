package main

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
		{name: "the key ID flag with a key from its file win", flagID: "FLAG-ID", flagSecret: "FLAG-SECRET", file: file, wantID: "FLAG-ID", wantSecret: "FLAG-SECRET"},
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

// TestClusterJoinRefusesTheS3SecretKeyOnTheCommandLine: an argument is in every user's `ps` and
// in the shell history, so join refuses the key there, before it reads anything, and says what
// to use instead.
func TestClusterJoinRefusesTheS3SecretKeyOnTheCommandLine(t *testing.T) {
	root := newRootCommand()
	root.SetArgs([]string{"cluster", "join", "east", "--cluster-kubeconfig", filepath.Join(t.TempDir(), "missing"),
		"--s3-access-key-id", "AKIDEXAMPLE", "--s3-secret-access-key", "not-a-real-secret"})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), "--s3-secret-access-key-file") || !strings.Contains(err.Error(), "$AWS_SECRET_ACCESS_KEY") {
		t.Fatalf("join with the secret key on the command line returned %v, want a refusal naming --s3-secret-access-key-file and $AWS_SECRET_ACCESS_KEY", err)
	}
}

func TestJoinReadsTheS3SecretKeyFromAFile(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "ENV-SECRET")
	dir := t.TempDir()
	cases := []struct{ name, content, want, wantErr string }{
		{name: "the key without its newline", content: "FILE-SECRET\n", want: "FILE-SECRET"},
		{name: "an empty file is refused", content: "\n", wantErr: "must hold the key alone"},
		{name: "two lines are refused", content: "a\nb\n", wantErr: "must hold the key alone"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, strconv.Itoa(i))
			if err := os.WriteFile(file, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			o := join.Options{}
			o.S3.AccessKeyID = "FLAG-ID"
			err := s3SecretKeyFromFile(&o, file)
			if err == nil {
				err = s3Credentials(&o, "")
			}
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("got %v, want an error with %q", err, tc.wantErr)
			case tc.wantErr == "" && (err != nil || o.S3.SecretAccessKey != tc.want):
				t.Errorf("got %q, %v; want %q", o.S3.SecretAccessKey, err, tc.want)
			}
		})
	}
}
