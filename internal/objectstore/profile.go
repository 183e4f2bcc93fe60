package objectstore

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/drover-io/drover/api/v1alpha1"
)

// Keys of an S3 profile's Secret. The credential keys are the AWS SDKs' environment names, so
// the Secret also works as an envFrom source.
const (
	SecretAccessKeyIDKey     = "AWS_ACCESS_KEY_ID"     //nolint:gosec // a key name, not a credential
	SecretSecretAccessKeyKey = "AWS_SECRET_ACCESS_KEY" //nolint:gosec // a key name, not a credential
	SecretEndpointKey        = "endpoint"
	SecretBucketKey          = "bucket"
	SecretRegionKey          = "region"
	// SecretInsecureKey, "true", allows an http:// endpoint (Profile.Insecure).
	SecretInsecureKey = "insecure"
	// SecretCABundleKey holds PEM certificates to trust for the endpoint (Profile.CABundle).
	SecretCABundleKey = "ca.crt"
)

// DefaultRegion is the region of a profile that names none. Most S3-compatible stores accept
// any region; AWS signs with this one when none is given.
const DefaultRegion = "us-east-1"

// Profile is what a client needs to reach one S3 profile.
type Profile struct {
	// Name is the profile's name, as conditions and messages show it.
	Name string
	// Endpoint is the store's URL: https://, or http:// when Insecure.
	Endpoint string
	// Insecure allows an http:// endpoint: requests, credentials signatures and every object
	// then cross the network in clear, and anyone on the path can answer as the store.
	Insecure bool
	// CABundle is PEM certificates to trust for an https:// endpoint, in addition to the
	// system's roots (a store with a private CA). Optional.
	CABundle []byte
	// Limits bound what reads accept; the zero value is the defaults (limits.go).
	Limits Limits
	Bucket string
	// Region to sign with; empty means DefaultRegion.
	Region          string
	AccessKeyID     string
	SecretAccessKey string
	// SecretNamespace and SecretName name the Secret the credentials came from, for messages.
	// Optional.
	SecretNamespace string
	SecretName      string
	// Keys seal and open every object of the store (envelope.go). ProfileFromSpec, the agent's
	// path, requires them.
	Keys Keyring
}

// String describes the profile without its secret access key, so logging a Profile leaks no
// credential.
func (p Profile) String() string {
	return fmt.Sprintf("S3 profile %s (endpoint %s, bucket %s, region %s, access key %s, Secret %s)",
		p.Name, p.Endpoint, p.Bucket, p.region(), p.AccessKeyID, p.secret())
}

// GoString is String, so %#v does not print the secret access key either.
func (p Profile) GoString() string { return p.String() }

func (p Profile) region() string {
	if p.Region == "" {
		return DefaultRegion
	}
	return p.Region
}

// secret is namespace/name of the credentials Secret, or "" when unknown.
func (p Profile) secret() string {
	switch {
	case p.SecretName == "":
		return ""
	case p.SecretNamespace == "":
		return p.SecretName
	default:
		return p.SecretNamespace + "/" + p.SecretName
	}
}

// Validate reports what keeps the profile from working, before any request is sent.
func (p Profile) Validate() error {
	var problems []string
	if p.Name == "" {
		problems = append(problems, "it has no name")
	}
	if err := validateEndpoint(p.Endpoint, p.Insecure); err != nil {
		problems = append(problems, err.Error())
	}
	if p.Bucket == "" {
		problems = append(problems, "it has no bucket")
	}
	if p.AccessKeyID == "" || p.SecretAccessKey == "" {
		problems = append(problems, "it has no access key ID or secret access key")
	}
	if len(p.CABundle) > 0 {
		if _, err := certPool(p.CABundle); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return &Error{
		Kind: KindInvalidProfile, Profile: p.Name, Endpoint: p.Endpoint, Bucket: p.Bucket,
		Secret: p.secret(), Err: errors.New(strings.Join(problems, "; ")),
	}
}

func validateEndpoint(endpoint string, insecure bool) error {
	if endpoint == "" {
		return errors.New("it has no endpoint")
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("endpoint %q is not an http:// or https:// URL, such as https://s3.example.com:9000", endpoint)
	}
	if u.Scheme == "http" && !insecure {
		return fmt.Errorf("endpoint %q is plain http://, which anyone on the network can read and answer as the store: serve the store over https:// (with caBundle for a private CA), or set insecure: true in the S3 profile to accept it", endpoint)
	}
	return nil
}

// ProfileFromSecret reads a whole profile from a Secret holding endpoint, bucket, region
// (optional), insecure and ca.crt (optional) and the credentials AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, as the lab's
// drover-system/s3-<cluster> Secrets do. Values are trimmed of surrounding white space (a
// Secret made from files often ends them with a newline).
func ProfileFromSecret(name string, secret *corev1.Secret) (Profile, error) {
	values, err := secretValues(name, secret, []string{
		SecretEndpointKey, SecretBucketKey, SecretAccessKeyIDKey, SecretSecretAccessKeyKey,
	})
	if err != nil {
		return Profile{}, err
	}
	p := Profile{
		Name:            name,
		Insecure:        strings.TrimSpace(string(secret.Data[SecretInsecureKey])) == "true",
		CABundle:        secret.Data[SecretCABundleKey],
		Endpoint:        values[SecretEndpointKey],
		Bucket:          values[SecretBucketKey],
		Region:          strings.TrimSpace(string(secret.Data[SecretRegionKey])),
		AccessKeyID:     values[SecretAccessKeyIDKey],
		SecretAccessKey: values[SecretSecretAccessKeyKey],
		SecretNamespace: secret.Namespace,
		SecretName:      secret.Name,
	}
	if len(secret.Data[SecretStoreKeysKey]) > 0 {
		keys, err := keyringFromSecret(name, secret)
		if err != nil {
			return Profile{}, err
		}
		p.Keys = keys
	}
	if err := p.Validate(); err != nil {
		return Profile{}, err
	}
	return p, nil
}

// ProfileFromSpec builds the profile a VolumeReplicationGroup or DRPolicy defines: endpoint,
// bucket and region from the spec, the credentials and the store keys (required) from its
// Secret (spec.secretRef, read by the caller), whose other keys are ignored.
func ProfileFromSpec(spec v1alpha1.S3Profile, secret *corev1.Secret) (Profile, error) {
	values, err := secretValues(spec.Name, secret, []string{SecretAccessKeyIDKey, SecretSecretAccessKeyKey})
	if err != nil {
		return Profile{}, err
	}
	p := Profile{
		Name:            spec.Name,
		Endpoint:        spec.Endpoint,
		Insecure:        spec.Insecure,
		Bucket:          spec.Bucket,
		Region:          spec.Region,
		AccessKeyID:     values[SecretAccessKeyIDKey],
		SecretAccessKey: values[SecretSecretAccessKeyKey],
		SecretNamespace: secret.Namespace,
		SecretName:      secret.Name,
	}
	if spec.CABundle != "" {
		p.CABundle = []byte(spec.CABundle)
	}
	if p.SecretName == "" {
		p.SecretNamespace, p.SecretName = spec.SecretRef.Namespace, spec.SecretRef.Name
	}
	keys, err := keyringFromSecret(spec.Name, secret)
	if err != nil {
		return Profile{}, err
	}
	p.Keys = keys
	if err := p.Validate(); err != nil {
		return Profile{}, err
	}
	return p, nil
}

// keyringFromSecret reads the store keys of a profile's Secret.
func keyringFromSecret(profile string, secret *corev1.Secret) (Keyring, error) {
	ref := secret.Name
	if secret.Namespace != "" {
		ref = secret.Namespace + "/" + ref
	}
	if len(secret.Data[SecretStoreKeysKey]) == 0 {
		return Keyring{}, &Error{Kind: KindInvalidProfile, Profile: profile, Secret: ref, Err: fmt.Errorf(
			"%w: the Secret %s has no key %s, the keys that seal every object drover writes to the store: run `drover cluster join` again for the cluster of this profile, which adds one and copies it to every joined cluster (docs/security.md, \"The S3 stores\")",
			errNoKeyring, ref, SecretStoreKeysKey)}
	}
	keys, err := ParseKeyring(string(secret.Data[SecretStoreKeysKey]), string(secret.Data[SecretStoreKeyIDKey]), "Secret "+ref)
	if err != nil {
		return Keyring{}, &Error{Kind: KindInvalidProfile, Profile: profile, Secret: ref, Err: fmt.Errorf("the store keys of Secret %s: %w", ref, err)}
	}
	return keys, nil
}

// secretValues returns the trimmed values of keys, or one error naming every key that is
// missing or empty.
func secretValues(profile string, secret *corev1.Secret, keys []string) (map[string]string, error) {
	if secret == nil {
		return nil, &Error{Kind: KindInvalidProfile, Profile: profile, Err: errors.New("its Secret is missing")}
	}
	ref := secret.Name
	if secret.Namespace != "" {
		ref = secret.Namespace + "/" + ref
	}
	values := map[string]string{}
	var missing []string
	for _, k := range keys {
		v := strings.TrimSpace(string(secret.Data[k]))
		if v == "" {
			missing = append(missing, k)
			continue
		}
		values[k] = v
	}
	switch len(missing) {
	case 0:
		return values, nil
	case 1:
		return nil, &Error{Kind: KindInvalidProfile, Profile: profile, Secret: ref,
			Err: fmt.Errorf("the Secret %s has no key %s (or it is empty): add it", ref, missing[0])}
	default:
		return nil, &Error{Kind: KindInvalidProfile, Profile: profile, Secret: ref,
			Err: fmt.Errorf("the Secret %s has no keys %s (or they are empty): add them", ref, strings.Join(missing, ", "))}
	}
}
