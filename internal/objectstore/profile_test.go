package objectstore_test

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/objectstore"
)

func profileSecret(data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "drover-system", Name: "s3-east"}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func fullSecretData() map[string]string {
	return map[string]string{
		"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "not-a-real-secret",
		"endpoint": "http://127.0.0.1:1234", "bucket": "drover", "region": "eu-west-1", "insecure": "true",
	}
}

func without(data map[string]string, keys ...string) map[string]string {
	out := map[string]string{}
	for k, v := range data {
		out[k] = v
	}
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

func with(data map[string]string, key, value string) map[string]string {
	out := without(data)
	out[key] = value
	return out
}

func TestProfileFromSecret(t *testing.T) {
	full := objectstore.Profile{
		Name: "s3-east", Endpoint: "http://127.0.0.1:1234", Insecure: true, Bucket: "drover", Region: "eu-west-1",
		AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "not-a-real-secret",
		SecretNamespace: "drover-system", SecretName: "s3-east",
	}
	noRegion := full
	noRegion.Region = ""
	tests := []struct {
		name    string
		secret  *corev1.Secret
		want    objectstore.Profile
		wantErr string
	}{
		{name: "every key", secret: profileSecret(fullSecretData()), want: full},
		{name: "no region: the default applies when signing", secret: profileSecret(without(fullSecretData(), "region")), want: noRegion},
		{
			name:   "values made from files end in a newline",
			secret: profileSecret(with(with(fullSecretData(), "AWS_SECRET_ACCESS_KEY", "not-a-real-secret\n"), "endpoint", " http://127.0.0.1:1234\n")),
			want:   full,
		},
		{
			name: "a missing endpoint", secret: profileSecret(without(fullSecretData(), "endpoint")),
			wantErr: "S3 profile s3-east is invalid: the Secret drover-system/s3-east has no key endpoint (or it is empty): add it",
		},
		{
			name: "an empty secret access key", secret: profileSecret(with(fullSecretData(), "AWS_SECRET_ACCESS_KEY", "")),
			wantErr: "the Secret drover-system/s3-east has no key AWS_SECRET_ACCESS_KEY (or it is empty): add it",
		},
		{
			name: "several keys missing", secret: profileSecret(without(fullSecretData(), "bucket", "AWS_ACCESS_KEY_ID")),
			wantErr: "the Secret drover-system/s3-east has no keys bucket, AWS_ACCESS_KEY_ID (or they are empty): add them",
		},
		{
			name: "an endpoint that is no URL", secret: profileSecret(with(fullSecretData(), "endpoint", "127.0.0.1:1234")),
			wantErr: `S3 profile s3-east is invalid: endpoint "127.0.0.1:1234" is not an http:// or https:// URL, such as https://s3.example.com:9000`,
		},
		{name: "no Secret", secret: nil, wantErr: "S3 profile s3-east is invalid: its Secret is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := objectstore.ProfileFromSecret("s3-east", tt.secret)
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got).To(Equal(tt.want))
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(errors.Is(err, objectstore.ErrInvalidProfile)).To(BeTrue())
			g.Expect(objectstore.ReasonOf(err)).To(Equal("StoreProfileInvalid"))
		})
	}
}

func TestProfileFromSpecTakesOnlyCredentialsFromTheSecret(t *testing.T) {
	g := NewWithT(t)
	spec := v1alpha1.S3Profile{
		Name: "s3-east", Endpoint: "https://s3.example.com:9000", Bucket: "dr-metadata",
		SecretRef: v1alpha1.SecretRef{Namespace: "drover-system", Name: "s3-east"},
	}
	got, err := objectstore.ProfileFromSpec(spec, profileSecret(withKeys(fullSecretData())))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Keys.Current).To(Equal("k1"))
	g.Expect(got.Keys.Source).To(Equal("Secret drover-system/s3-east"))
	got.Keys = objectstore.Keyring{}
	g.Expect(got).To(Equal(objectstore.Profile{
		Name: "s3-east", Endpoint: "https://s3.example.com:9000", Bucket: "dr-metadata",
		AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "not-a-real-secret",
		SecretNamespace: "drover-system", SecretName: "s3-east",
	}))

	_, err = objectstore.ProfileFromSpec(spec, profileSecret(without(withKeys(fullSecretData()), "AWS_ACCESS_KEY_ID")))
	g.Expect(err).To(MatchError(ContainSubstring("has no key AWS_ACCESS_KEY_ID")))
	_, err = objectstore.ProfileFromSpec(spec, profileSecret(withKeys(map[string]string{
		"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "s",
	})))
	g.Expect(err).NotTo(HaveOccurred(), "endpoint and bucket come from the spec, not the Secret")
	_, err = objectstore.ProfileFromSpec(spec, profileSecret(fullSecretData()))
	g.Expect(err).To(MatchError(ContainSubstring("the Secret drover-system/s3-east has no key store-keys")), "nothing is written in clear")
	g.Expect(objectstore.KindOf(err)).To(Equal(objectstore.KindInvalidProfile))
	_, err = objectstore.ProfileFromSpec(spec, profileSecret(with(withKeys(fullSecretData()), "store-key-id", "k2")))
	g.Expect(err).To(MatchError(ContainSubstring("store-key-id names key k2, which store-keys does not hold (it holds k1)")))
}

// withKeys is data with one store key, k1.
func withKeys(data map[string]string) map[string]string {
	out := with(data, "store-keys", "k1:"+encodeKey(make([]byte, objectstore.StoreKeySize))+"\n")
	return with(out, "store-key-id", "k1")
}

func TestNewS3RefusesAProfileThatCannotWork(t *testing.T) {
	tests := []struct {
		name    string
		change  func(*objectstore.Profile)
		wantErr string
	}{
		{"no name", func(p *objectstore.Profile) { p.Name = "" }, "it has no name"},
		{"no endpoint", func(p *objectstore.Profile) { p.Endpoint = "" }, "it has no endpoint"},
		{"another scheme", func(p *objectstore.Profile) { p.Endpoint = "s3://bucket" }, `endpoint "s3://bucket" is not an http:// or https:// URL`},
		{"no bucket", func(p *objectstore.Profile) { p.Bucket = "" }, "it has no bucket"},
		{"no secret key", func(p *objectstore.Profile) { p.SecretAccessKey = "" }, "it has no access key ID or secret access key"},
		{"plain http without insecure", func(p *objectstore.Profile) { p.Insecure = false },
			`endpoint "http://127.0.0.1:1234" is plain http://, which anyone on the network can read and answer as the store: serve the store over https:// (with caBundle for a private CA), or set insecure: true`},
		{"a CA bundle without a certificate", func(p *objectstore.Profile) { p.CABundle = []byte("not PEM") },
			"its CA bundle holds no PEM certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			p := testProfile()
			tt.change(&p)
			_, err := objectstore.NewS3(p)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(objectstore.KindOf(err)).To(Equal(objectstore.KindInvalidProfile))
		})
	}
}

func TestProfileNeverPrintsItsSecretAccessKey(t *testing.T) {
	g := NewWithT(t)
	p := testProfile()
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(format, p)
		g.Expect(out).NotTo(ContainSubstring(p.SecretAccessKey), format)
		g.Expect(out).To(ContainSubstring("s3-east"), format)
	}
}
