package objectstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// Timeouts and retries. A store that is down must fail a call within seconds, because the agent
// reconciles several VRGs against several stores and retries with backoff itself: one retry
// inside the SDK covers a dropped connection or a 503, no more.
const (
	// requestTimeout bounds one HTTP request, its body included. Objects are PV/PVC metadata
	// and captured Kubernetes objects: kilobytes to a few megabytes.
	requestTimeout = 10 * time.Second
	// dialTimeout bounds connecting; a dead host with no one refusing the connection costs this.
	dialTimeout = 3 * time.Second
	// tlsHandshakeTimeout bounds the TLS handshake.
	tlsHandshakeTimeout = 5 * time.Second
	// maxAttempts is the SDK's attempts per call, the first included.
	maxAttempts = 2
	// maxBackoff caps the SDK's delay before its retry.
	maxBackoff = 500 * time.Millisecond
	// deleteWorkers is how many objects DeletePrefix deletes at once.
	deleteWorkers = 8
)

// transports are shared by every S3 store of the process, one per CA bundle ("" for the
// system's roots alone): stores are cheap to make (one per profile and reconcile is fine) while
// connections are pooled per endpoint.
var (
	transportsMu sync.Mutex
	transports   = map[string]*http.Transport{}
)

// transportFor returns the shared transport that trusts the system's roots and caBundle.
func transportFor(caBundle []byte) (*http.Transport, error) {
	sum := ""
	if len(caBundle) > 0 {
		h := sha256.Sum256(caBundle)
		sum = hex.EncodeToString(h[:])
	}
	transportsMu.Lock()
	defer transportsMu.Unlock()
	if t := transports[sum]; t != nil {
		return t, nil
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if sum != "" {
		pool, err := certPool(caBundle)
		if err != nil {
			return nil, err
		}
		tlsConfig.RootCAs = pool
	}
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		// A cluster-wide proxy (HTTPS_PROXY, NO_PROXY) applies as it does to other clients.
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   tlsHandshakeTimeout,
		TLSClientConfig:       tlsConfig,
		ExpectContinueTimeout: time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   deleteWorkers,
		ForceAttemptHTTP2:     true,
	}
	transports[sum] = t
	return t, nil
}

// certPool is the system's roots plus the PEM certificates of caBundle.
func certPool(caBundle []byte) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(caBundle) {
		return nil, errors.New("its CA bundle holds no PEM certificate: set caBundle to the PEM certificates of the store's CA")
	}
	return pool, nil
}

// s3Store is a Store over one bucket of an S3-compatible server.
type s3Store struct {
	profile Profile
	client  *s3.Client
	// pageSize is MaxKeys of a ListObjectsV2 page; 0 leaves it to the server (1000).
	pageSize int32
}

// NewS3 returns a Store for profile over aws-sdk-go-v2. It sends no request: a store that is
// down or refuses the credentials is found by the first call. The client is built from explicit
// options, never from the SDK's config loader, so nothing of the environment (AWS_PROFILE,
// AWS_CA_BUNDLE, AWS_ENDPOINT_URL) or of ~/.aws reaches it.
func NewS3(profile Profile) (Store, error) {
	if err := profile.Validate(); err != nil {
		return nil, err
	}
	transport, err := transportFor(profile.CABundle)
	if err != nil {
		return nil, &Error{Kind: KindInvalidProfile, Profile: profile.Name, Endpoint: profile.Endpoint, Bucket: profile.Bucket,
			Secret: profile.secret(), Err: err}
	}
	client := s3.New(s3.Options{
		AppID:        "drover",
		Region:       profile.region(),
		BaseEndpoint: aws.String(profile.Endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(profile.AccessKeyID, profile.SecretAccessKey, ""),
		// Virtual-host addressing needs DNS for every bucket; S3-compatible stores rarely have it.
		UsePathStyle: true,
		HTTPClient:   &http.Client{Transport: transport, Timeout: requestTimeout},
		// The SDK's default checksums send aws-chunked bodies that several S3-compatible stores
		// store verbatim or refuse; checksum only where S3 requires it.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = maxAttempts
			o.MaxBackoff = maxBackoff
			// No client-side retry quota: once a dead store drained it, every later call
			// would fail with "retry quota exceeded" instead of the store's real error.
			o.RateLimiter = ratelimit.None
		}),
	})
	return &s3Store{profile: profile, client: client}, nil
}

func (s *s3Store) Name() string { return s.profile.Name }

func (s *s3Store) Put(ctx context.Context, key string, body []byte) error {
	if err := checkKey(OpPut, key); err != nil {
		return s.fail(OpPut, key, err)
	}
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(s.profile.Bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
	})
	if err != nil {
		return s.fail(OpPut, key, err)
	}
	return nil
}

// PutIf is PutObject with If-Match: version, or If-None-Match: * for an empty version. The SDK
// does not retry a 412; a retried request whose first attempt was applied but whose answer was
// lost fails with ErrPreconditionFailed, which the caller resolves by reading again.
func (s *s3Store) PutIf(ctx context.Context, key string, body []byte, version string) error {
	if err := checkKey(OpPutIf, key); err != nil {
		return s.fail(OpPutIf, key, err)
	}
	in := &s3.PutObjectInput{
		Bucket:        aws.String(s.profile.Bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
	}
	if version == "" {
		in.IfNoneMatch = aws.String("*")
	} else {
		in.IfMatch = aws.String(version)
	}
	_, err := s.client.PutObject(ctx, in)
	var apiErr smithy.APIError
	if version != "" && errors.As(err, &apiErr) && apiErr.ErrorCode() == "NoSuchKey" {
		// If-Match on an object that is gone: it changed since the version read, as S3 says.
		return &Error{Kind: KindPreconditionFailed, Profile: s.profile.Name, Endpoint: s.profile.Endpoint, Bucket: s.profile.Bucket,
			Secret: s.profile.secret(), Op: OpPutIf, Key: key, Err: err}
	}
	if err != nil {
		return s.fail(OpPutIf, key, err)
	}
	return nil
}

func (s *s3Store) Get(ctx context.Context, key string) ([]byte, error) {
	body, _, err := s.GetVersion(ctx, key)
	return body, err
}

func (s *s3Store) GetVersion(ctx context.Context, key string) ([]byte, string, error) {
	if err := checkKey(OpGet, key); err != nil {
		return nil, "", s.fail(OpGet, key, err)
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(s.profile.Bucket),
		Key:    aws.String(key),
	})
	if err != nil {
		return nil, "", s.fail(OpGet, key, err)
	}
	defer func() { _ = out.Body.Close() }()
	length := int64(-1)
	if out.ContentLength != nil {
		length = *out.ContentLength
	}
	body, err := readBounded(out.Body, length, s.profile.Limits.maxObjectBytes(key))
	var tooLarge *tooLargeError
	if errors.As(err, &tooLarge) {
		return nil, "", s.refuse(key, err)
	}
	if err != nil {
		return nil, "", s.fail(OpGet, key, err)
	}
	return body, aws.ToString(out.ETag), nil
}

func (s *s3Store) List(ctx context.Context, prefix string) ([]string, error) {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.profile.Bucket)}
	if prefix != "" {
		in.Prefix = aws.String(prefix)
	}
	if s.pageSize > 0 {
		in.MaxKeys = aws.Int32(s.pageSize)
	}
	pages := s3.NewListObjectsV2Paginator(s.client, in, func(o *s3.ListObjectsV2PaginatorOptions) {
		// A server that hands the same continuation token back would loop forever.
		o.StopOnDuplicateToken = true
	})
	keys := []string{}
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, s.fail(OpList, prefix, err)
		}
		for _, obj := range page.Contents {
			keys = append(keys, aws.ToString(obj.Key))
		}
		if limit := s.profile.Limits.maxKeys(); len(keys) > limit {
			return nil, s.refuse(prefix, fmt.Errorf("listing it finds more than %d keys, the limit: refused before reading them all", limit))
		}
	}
	return keys, nil
}

func (s *s3Store) Delete(ctx context.Context, key string) error {
	if err := checkKey(OpDelete, key); err != nil {
		return s.fail(OpDelete, key, err)
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{
		Bucket: aws.String(s.profile.Bucket),
		Key:    aws.String(key),
	})
	var apiErr smithy.APIError
	if err == nil || errors.As(err, &apiErr) && apiErr.ErrorCode() == "NoSuchKey" {
		// S3 answers 204 for an absent key; some compatible stores answer NoSuchKey.
		return nil
	}
	return s.fail(OpDelete, key, err)
}

// DeletePrefix lists the prefix and deletes its objects one by one, a few at a time. It does
// not use DeleteObjects: that call requires a checksum header, and stores that predate the SDK's
// CRC32 default (older Ceph RGW and MinIO) refuse it without Content-MD5.
func (s *s3Store) DeletePrefix(ctx context.Context, prefix string) error {
	if err := checkKey(OpDeletePrefix, prefix); err != nil {
		return s.fail(OpDeletePrefix, prefix, err)
	}
	keys, err := s.List(ctx, prefix)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan string)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range min(deleteWorkers, len(keys)) {
		wg.Go(func() {
			for key := range work {
				if err := s.Delete(ctx, key); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
						cancel()
					}
					mu.Unlock()
				}
			}
		})
	}
	for _, key := range keys {
		if ctx.Err() != nil {
			break
		}
		work <- key
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		return s.fail(OpDeletePrefix, prefix, err)
	}
	return nil
}

// refuse is the KindRefused error of key.
func (s *s3Store) refuse(key string, err error) error {
	return &Error{Kind: KindRefused, Profile: s.profile.Name, Endpoint: s.profile.Endpoint, Bucket: s.profile.Bucket,
		Secret: s.profile.secret(), Op: OpGet, Key: key, Err: err}
}

// fail classifies err from operation op on key as an *Error of the store's profile.
func (s *s3Store) fail(op, key string, err error) error {
	notFoundCode := ""
	if op == OpGet {
		notFoundCode = "NoSuchKey"
	}
	return &Error{
		Kind: classify(err, notFoundCode), Profile: s.profile.Name, Endpoint: s.profile.Endpoint, Bucket: s.profile.Bucket,
		Secret: s.profile.secret(), Op: op, Key: key, Err: err,
	}
}
