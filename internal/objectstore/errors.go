package objectstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/drover-io/drover/api/v1alpha1"
)

// Kind classifies a store failure by what the user has to do about it.
type Kind int

const (
	// KindOther is any failure not classified below: the store answered with an error drover
	// does not expect (a server error, throttling, a TLS failure). The message carries the
	// store's own words.
	KindOther Kind = iota
	// KindNotFound means the object does not exist. Only Get reports it.
	KindNotFound
	// KindUnreachable means no answer from the store: connection refused or reset, a timeout, a
	// name that does not resolve.
	KindUnreachable
	// KindUnauthorized means the store refused the credentials or the access.
	KindUnauthorized
	// KindNoSuchBucket means the profile's bucket does not exist.
	KindNoSuchBucket
	// KindInvalidProfile means the profile cannot work as written (a key missing in its Secret, an
	// endpoint that is not a URL); no request was sent.
	KindInvalidProfile
	// KindPreconditionFailed means a conditional write (PutIf) found the object changed since
	// the version it was given, or present when it was to be absent: another writer won.
	KindPreconditionFailed
	// KindRefused means the store holds an object that drover refuses to read or to act on: it
	// is larger than its limit, a listing has more keys than the limit, or its content fails a
	// check of what drover would create from it. Nothing is created from it.
	KindRefused
)

// Condition reasons of the kinds, for the conditions that report a store (ClusterDataProtected,
// ClusterDataReady, KubeObjectsReady).
const (
	ReasonStoreError          = "StoreError"
	ReasonStoreObjectNotFound = "StoreObjectNotFound"
	ReasonStoreUnreachable    = "StoreUnreachable"
	ReasonStoreUnauthorized   = "StoreUnauthorized"
	ReasonStoreNoSuchBucket   = "StoreNoSuchBucket"
	ReasonStoreProfileInvalid = "StoreProfileInvalid"
	ReasonStoreConflict       = "StoreConflict"
	ReasonStoreObjectRefused  = v1alpha1.ReasonStoreObjectRefused
)

// Sentinels, one per kind, for errors.Is: every *Error is its kind's sentinel.
var (
	// ErrNotFound: the object does not exist.
	ErrNotFound = errors.New("object not found")
	// ErrUnreachable: the store does not answer.
	ErrUnreachable = errors.New("store unreachable")
	// ErrUnauthorized: the store refused the credentials or the access.
	ErrUnauthorized = errors.New("credentials refused")
	// ErrNoSuchBucket: the bucket does not exist.
	ErrNoSuchBucket = errors.New("no such bucket")
	// ErrInvalidProfile: the profile cannot work as written.
	ErrInvalidProfile = errors.New("invalid S3 profile")
	// ErrPreconditionFailed: a conditional write lost to another writer.
	ErrPreconditionFailed = errors.New("precondition failed")
	// ErrRefused: the store holds an object drover refuses.
	ErrRefused = errors.New("store object refused")
)

func (k Kind) String() string {
	switch k {
	case KindNotFound:
		return "NotFound"
	case KindUnreachable:
		return "Unreachable"
	case KindUnauthorized:
		return "Unauthorized"
	case KindNoSuchBucket:
		return "NoSuchBucket"
	case KindInvalidProfile:
		return "InvalidProfile"
	case KindPreconditionFailed:
		return "PreconditionFailed"
	case KindRefused:
		return "Refused"
	default:
		return "Other"
	}
}

// Reason is the kind's condition reason.
func (k Kind) Reason() string {
	switch k {
	case KindNotFound:
		return ReasonStoreObjectNotFound
	case KindUnreachable:
		return ReasonStoreUnreachable
	case KindUnauthorized:
		return ReasonStoreUnauthorized
	case KindNoSuchBucket:
		return ReasonStoreNoSuchBucket
	case KindInvalidProfile:
		return ReasonStoreProfileInvalid
	case KindPreconditionFailed:
		return ReasonStoreConflict
	case KindRefused:
		return ReasonStoreObjectRefused
	default:
		return ReasonStoreError
	}
}

func (k Kind) sentinel() error {
	switch k {
	case KindNotFound:
		return ErrNotFound
	case KindUnreachable:
		return ErrUnreachable
	case KindUnauthorized:
		return ErrUnauthorized
	case KindNoSuchBucket:
		return ErrNoSuchBucket
	case KindInvalidProfile:
		return ErrInvalidProfile
	case KindPreconditionFailed:
		return ErrPreconditionFailed
	case KindRefused:
		return ErrRefused
	default:
		return nil
	}
}

// Error is a failed store operation, classified. Its message names the profile, where it is and
// what to fix, and, except for KindNotFound and KindOther, no key or request id, so a condition
// carrying it does not change from one reconcile to the next while the cause stays the same.
type Error struct {
	Kind Kind
	// Profile is the S3 profile's name; Endpoint and Bucket where it points.
	Profile  string
	Endpoint string
	Bucket   string
	// Secret is the namespace/name of the Secret holding the credentials, when known.
	Secret string
	// Op is the operation (put, get, list, delete, delete-prefix) and Key its key or prefix.
	Op  string
	Key string
	// Err is the underlying error, from the SDK or the network.
	Err error
}

// Refused is the KindRefused error of the object at key of the store named profile: err says
// which check it fails. Callers that decode what a store holds refuse with it.
func Refused(profile, key string, err error) *Error {
	return &Error{Kind: KindRefused, Profile: profile, Op: OpGet, Key: key, Err: err}
}

// Reason is the error's condition reason.
func (e *Error) Reason() string { return e.Kind.Reason() }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of the error's kind.
func (e *Error) Is(target error) bool {
	s := e.Kind.sentinel()
	return s != nil && target == s
}

func (e *Error) Error() string {
	where := "S3 profile " + e.Profile
	if e.Endpoint != "" {
		where += " at " + e.Endpoint
	}
	switch e.Kind {
	case KindNotFound:
		return fmt.Sprintf("%s has no object %q in bucket %s", where, e.Key, e.Bucket)
	case KindUnreachable:
		return fmt.Sprintf("%s is unreachable (%s): check that the store is running and that this cluster can reach its endpoint",
			where, unreachableCause(e.Err))
	case KindUnauthorized:
		return e.unauthorizedMessage(where)
	case KindNoSuchBucket:
		return fmt.Sprintf("%s has no bucket %q: create the bucket, or set the profile's bucket to one that exists", where, e.Bucket)
	case KindInvalidProfile:
		return fmt.Sprintf("S3 profile %s is invalid: %v", e.Profile, e.Err)
	case KindPreconditionFailed:
		return fmt.Sprintf("%s: the object %q changed while it was being written (another writer won): read it again", where, e.Key)
	case KindRefused:
		object := fmt.Sprintf("object %q", e.Key)
		if e.Bucket != "" {
			object += " of bucket " + e.Bucket
		}
		return fmt.Sprintf("%s: %s is refused, and nothing is created from it: %v; drover did not write it as it is: check who can write to the bucket, then delete the object or let the primary rewrite it",
			where, object, e.Err)
	default:
		op := e.Op
		if e.Key != "" {
			op += fmt.Sprintf(" %q", e.Key)
		}
		return fmt.Sprintf("%s: %s failed: %s", where, op, otherCause(e.Err))
	}
}

func (e *Error) unauthorizedMessage(where string) string {
	code := "refused"
	var apiErr smithy.APIError
	if errors.As(e.Err, &apiErr) {
		code = apiErr.ErrorCode()
	}
	creds, fix := "its credentials", "check the access key ID and secret access key"
	if e.Secret != "" {
		creds = "the credentials in Secret " + e.Secret
		fix = "check " + SecretAccessKeyIDKey + " and " + SecretSecretAccessKeyKey
	}
	if code == "AccessDenied" {
		return fmt.Sprintf("%s denied access with %s (%s): %s, and that the key may read and write bucket %s",
			where, creds, code, fix, e.Bucket)
	}
	return fmt.Sprintf("%s rejected %s (%s): %s", where, creds, code, fix)
}

// unauthorizedCodes are the S3 error codes of refused credentials or access. versitygw answers
// an unknown access key with XAdminUserNotFound (HTTP 404) when it runs without an IAM store,
// which is why classification goes by code and never by status.
var unauthorizedCodes = map[string]bool{
	"InvalidAccessKeyId":    true,
	"SignatureDoesNotMatch": true,
	"AccessDenied":          true,
	"XAdminUserNotFound":    true,
	"InvalidToken":          true,
	"ExpiredToken":          true,
}

// classify returns the kind of an error from the SDK or the network. notFoundCode is the S3
// code meaning "no such object" for the operation, or "" when absence is not an error to
// report as KindNotFound.
func classify(err error, notFoundCode string) Kind {
	if k := KindOf(err); k != KindOther {
		return k
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		code := apiErr.ErrorCode()
		switch {
		case unauthorizedCodes[code]:
			return KindUnauthorized
		case code == "NoSuchBucket":
			return KindNoSuchBucket
		case code == "PreconditionFailed" || code == "ConditionalRequestConflict":
			// 412, or AWS's 409 for a conditional write racing another on the same key.
			return KindPreconditionFailed
		case notFoundCode != "" && code == notFoundCode:
			return KindNotFound
		}
		return KindOther
	}
	if errors.Is(err, context.Canceled) {
		// The caller gave up; nothing is known of the store.
		return KindOther
	}
	if isCertificateError(err) {
		// The store answered, with a certificate this client does not trust: a configuration
		// problem, not an outage.
		return KindOther
	}
	// A request that could not be sent or answered, a network error, a deadline, or a
	// connection lost in the middle of a body.
	var sendErr *smithyhttp.RequestSendError
	var netErr net.Error
	if errors.As(err, &sendErr) || errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.ErrUnexpectedEOF) {
		return KindUnreachable
	}
	return KindOther
}

func isCertificateError(err error) bool {
	var verifyErr *tls.CertificateVerificationError
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var recordHeader tls.RecordHeaderError
	return errors.As(err, &verifyErr) || errors.As(err, &unknownAuthority) || errors.As(err, &hostname) ||
		errors.As(err, &invalid) || errors.As(err, &recordHeader)
}

// KindOf returns the kind of err: the kind of the *Error in its chain, or of the sentinel it
// wraps, or KindOther.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	for _, k := range []Kind{KindNotFound, KindUnreachable, KindUnauthorized, KindNoSuchBucket, KindInvalidProfile, KindPreconditionFailed, KindRefused} {
		if errors.Is(err, k.sentinel()) {
			return k
		}
	}
	return KindOther
}

// ReasonOf returns the condition reason of a store error (ReasonStoreError when unclassified).
func ReasonOf(err error) string { return KindOf(err).Reason() }

// unreachableCause describes why a store did not answer in words that stay the same from one
// attempt to the next: no ephemeral ports, URLs or keys.
func unreachableCause(err error) string {
	var dnsErr *net.DNSError
	var opErr *net.OpError
	var netErr net.Error
	switch {
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("the name %s does not resolve: %s", dnsErr.Name, dnsErr.Err)
	case errors.As(err, &netErr) && netErr.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return "no answer within the timeout"
	case errors.As(err, &opErr):
		if opErr.Op == "dial" && opErr.Addr != nil {
			return fmt.Sprintf("dial %s: %v", opErr.Addr, innermost(opErr.Err))
		}
		return fmt.Sprintf("%s: %v", opErr.Op, innermost(opErr.Err))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection closed without a complete answer"
	case err == nil:
		return "no answer"
	default:
		return innermost(err).Error()
	}
}

// otherCause is the store's own words: the S3 code and message of an API error, else the error.
func otherCause(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		if msg := apiErr.ErrorMessage(); msg != "" {
			return apiErr.ErrorCode() + ": " + strings.TrimSuffix(msg, ".")
		}
		return apiErr.ErrorCode()
	}
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}

// innermost follows a chain of single wraps to its end.
func innermost(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}
