package lab

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/objectstore"
)

// Each managed cluster's S3 profile is served by its own versitygw process on loopback, a real S3
// gateway over plain files in <cluster>/s3/data that checks the credentials in
// <cluster>/s3/credentials.json. It is a component of its cluster, so it stops and starts with it
// as a store hosted in that cluster would.
const (
	// S3Bucket is the bucket every lab S3 server has from its first start.
	S3Bucket = "drover"
	// S3Region is the region the lab's S3 servers report and sign with.
	S3Region = "us-east-1"
	// S3SecretNamespace holds, on every lab cluster, one Secret per managed cluster's S3 profile,
	// named after the profile.
	S3SecretNamespace = "drover-system"

	// Keys of an S3 profile's Secret. The credential keys are the AWS SDKs' environment names, so
	// the Secret also works as an envFrom source.
	S3SecretAccessKeyIDKey     = "AWS_ACCESS_KEY_ID"     //nolint:gosec // a key name, not a credential
	S3SecretSecretAccessKeyKey = "AWS_SECRET_ACCESS_KEY" //nolint:gosec // a key name, not a credential
	S3SecretEndpointKey        = "endpoint"
	S3SecretBucketKey          = "bucket"
	S3SecretRegionKey          = "region"
	S3SecretInsecureKey        = "insecure"

	s3CredentialsFile = "credentials.json"
	// s3RequestTimeout bounds one request of the lab's own S3 client (readiness, bucket creation).
	s3RequestTimeout = 2 * time.Second
)

// S3Profile is what a client needs to use one managed cluster's S3 server.
type S3Profile struct {
	// Name is the profile's name, s3-<cluster>, also the name of its Secret.
	Name     string
	Endpoint string
	// Insecure is always true: the lab's servers serve plain http:// on the loopback.
	Insecure        bool
	Bucket          string
	Region          string
	AccessKeyID     string
	SecretAccessKey string
	// StoreKeys seal every object drover writes to the store (objectstore.Keyring): every
	// cluster's copy of the profile's Secret holds them, the store never does.
	StoreKeys objectstore.Keyring
}

// s3Credentials is the content of <cluster>/s3/credentials.json.
type s3Credentials struct {
	AccessKeyID     string `json:"accessKeyID"`
	SecretAccessKey string `json:"secretAccessKey"`
	// StoreKeys and StoreKeyID are the profile's store keys, in the Secret's form
	// (objectstore.SecretStoreKeysKey, objectstore.SecretStoreKeyIDKey).
	StoreKeys  string `json:"storeKeys"`
	StoreKeyID string `json:"storeKeyID"`
}

// S3Profiles returns the S3 profile of every managed cluster, in cluster order. The lab must have
// been started once, which generates the credentials.
func (l *Lab) S3Profiles() ([]S3Profile, error) {
	var out []S3Profile
	for _, c := range l.clusters {
		if c.Role != RoleManaged {
			continue
		}
		p, err := c.s3Profile()
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// S3Endpoint is the URL of a managed cluster's S3 store as drover reaches it, the profile's
// endpoint: through the cluster's S3 proxy, which a partition cuts (partition.go).
func (c *Cluster) S3Endpoint() string { return fmt.Sprintf("http://127.0.0.1:%d", c.Ports.S3Proxy) }

// s3DirectEndpoint is the URL of the S3 server itself.
func (c *Cluster) s3DirectEndpoint() string { return fmt.Sprintf("http://127.0.0.1:%d", c.Ports.S3) }

func (c *Cluster) s3Dir() string     { return filepath.Join(c.dir, "s3") }
func (c *Cluster) s3DataDir() string { return filepath.Join(c.s3Dir(), "data") }
func (c *Cluster) s3IAMDir() string  { return filepath.Join(c.s3Dir(), "iam") }

// S3ObjectPath is the file in which the cluster's S3 server (versitygw's posix backend) keeps
// object key of S3Bucket: tests write there what the server then serves, such as a sparse
// object of a size no client should read.
func (c *Cluster) S3ObjectPath(key string) string {
	return filepath.Join(c.s3DataDir(), S3Bucket, filepath.FromSlash(key))
}

// s3Profile reads the cluster's S3 profile; it fails when the credentials were never generated.
func (c *Cluster) s3Profile() (S3Profile, error) {
	path := filepath.Join(c.s3Dir(), s3CredentialsFile)
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return S3Profile{}, fmt.Errorf("cluster %s has no S3 credentials yet: run `drover lab up`", c.Name)
	}
	if err != nil {
		return S3Profile{}, fmt.Errorf("failed to read S3 credentials of %s: %w", c.Name, err)
	}
	var creds s3Credentials
	if err := json.Unmarshal(raw, &creds); err != nil || creds.AccessKeyID == "" || creds.SecretAccessKey == "" {
		return S3Profile{}, fmt.Errorf("S3 credentials %s are damaged: run `drover lab down` and `drover lab up`", path)
	}
	keys, err := objectstore.ParseKeyring(creds.StoreKeys, creds.StoreKeyID, path)
	if err != nil {
		return S3Profile{}, fmt.Errorf("S3 credentials %s have no valid store keys (%w): run `drover lab down` and `drover lab up`", path, err)
	}
	return S3Profile{
		Name: S3ProfileName(c.Name), Endpoint: c.S3Endpoint(), Insecure: true, Bucket: S3Bucket, Region: S3Region,
		AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey, StoreKeys: keys,
	}, nil
}

// ensureS3Profile returns the cluster's S3 profile, generating its credentials at the first call.
// Clusters start in parallel and every cluster's bootstrap reads every profile, so creation is
// atomic: the file is written under a temporary name and linked into place, and a caller that
// loses the race reads the winner's credentials.
func (c *Cluster) ensureS3Profile() (S3Profile, error) {
	if p, err := c.s3Profile(); err == nil {
		return p, nil
	}
	if err := os.MkdirAll(c.s3Dir(), 0o700); err != nil {
		return S3Profile{}, fmt.Errorf("failed to create %s: %w", c.s3Dir(), err)
	}
	keys := objectstore.NewKeyring(filepath.Join(c.s3Dir(), s3CredentialsFile)).SecretData()
	raw, err := json.MarshalIndent(s3Credentials{
		// rand.Text is 26 characters of base32, 130 bits: AWS-shaped keys, uppercase ids.
		AccessKeyID:     "LAB" + rand.Text()[:17],
		SecretAccessKey: rand.Text() + rand.Text(),
		StoreKeys:       string(keys[objectstore.SecretStoreKeysKey]),
		StoreKeyID:      string(keys[objectstore.SecretStoreKeyIDKey]),
	}, "", "  ")
	if err != nil {
		return S3Profile{}, err
	}
	tmp, err := os.CreateTemp(c.s3Dir(), s3CredentialsFile+".*")
	if err != nil {
		return S3Profile{}, fmt.Errorf("failed to write S3 credentials of %s: %w", c.Name, err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	_, err = tmp.Write(raw)
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return S3Profile{}, fmt.Errorf("failed to write S3 credentials of %s: %w", c.Name, err)
	}
	// CreateTemp makes the file 0600; os.Link fails if another caller linked first.
	if err := os.Link(tmp.Name(), filepath.Join(c.s3Dir(), s3CredentialsFile)); err != nil && !errors.Is(err, os.ErrExist) {
		return S3Profile{}, fmt.Errorf("failed to write S3 credentials of %s: %w", c.Name, err)
	}
	return c.s3Profile()
}

// env is the S3 server's environment: its root credentials. versitygw reads ROOT_ACCESS_KEY_ID
// before ROOT_ACCESS_KEY, so these names win over anything the caller's environment holds.
func (p S3Profile) env() []string {
	return []string{"ROOT_ACCESS_KEY_ID=" + p.AccessKeyID, "ROOT_SECRET_ACCESS_KEY=" + p.SecretAccessKey}
}

// client returns an S3 client for the profile. It is built from explicit options, without the
// SDK's config loader, so nothing of the environment or ~/.aws (AWS_CA_BUNDLE, profiles,
// endpoints) reaches it.
func (p S3Profile) client() *s3.Client {
	return s3.New(s3.Options{
		Region:       p.Region,
		BaseEndpoint: aws.String(p.Endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(p.AccessKeyID, p.SecretAccessKey, ""),
		UsePathStyle: true,
		HTTPClient:   &http.Client{Timeout: s3RequestTimeout},
		// The default checksum mode sends aws-chunked bodies that some S3-compatible stores
		// mishandle (LAB-NOTES); the lab only checksums where S3 requires it.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		RetryMaxAttempts:           1,
	})
}

// s3Ready succeeds once the S3 server answers an authenticated request, so it also proves the
// server took the profile's credentials.
func (p S3Profile) s3Ready(ctx context.Context) error {
	_, err := p.client().ListBuckets(ctx, &s3.ListBucketsInput{})
	return err
}

// ensureBucket creates the profile's bucket unless the server already has it.
func (p S3Profile) ensureBucket(ctx context.Context) error {
	_, err := p.client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(p.Bucket)})
	var apiErr smithy.APIError
	if err == nil || errors.As(err, &apiErr) && apiErr.ErrorCode() == "BucketAlreadyOwnedByYou" {
		return nil
	}
	return fmt.Errorf("failed to create bucket %s at %s: %w", p.Bucket, p.Endpoint, err)
}

// applyS3Secrets creates, in the cluster, namespace S3SecretNamespace and one Secret per managed
// cluster's S3 profile, so drover on any cluster can reach every profile.
func (c *Cluster) applyS3Secrets(ctx context.Context, cl client.Client) error {
	objs := []client.Object{&corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: S3SecretNamespace},
	}}
	for _, o := range c.lab.clusters {
		if o.Role != RoleManaged {
			continue
		}
		p, err := o.ensureS3Profile()
		if err != nil {
			return err
		}
		objs = append(objs, s3Secret(p))
	}
	for _, obj := range objs {
		if err := apply(ctx, cl, obj); err != nil {
			return err
		}
	}
	return nil
}

func s3Secret(p S3Profile) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: S3SecretNamespace, Name: p.Name},
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			S3SecretAccessKeyIDKey:          []byte(p.AccessKeyID),
			S3SecretSecretAccessKeyKey:      []byte(p.SecretAccessKey),
			S3SecretEndpointKey:             []byte(p.Endpoint),
			S3SecretBucketKey:               []byte(p.Bucket),
			S3SecretRegionKey:               []byte(p.Region),
			S3SecretInsecureKey:             []byte(strconv.FormatBool(p.Insecure)),
			objectstore.SecretStoreKeysKey:  p.StoreKeys.SecretData()[objectstore.SecretStoreKeysKey],
			objectstore.SecretStoreKeyIDKey: p.StoreKeys.SecretData()[objectstore.SecretStoreKeyIDKey],
		},
	}
}
