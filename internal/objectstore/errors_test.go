package objectstore_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	. "github.com/onsi/gomega"

	"github.com/drover-io/drover/internal/objectstore"
)

// sdkAPIError wraps an S3 error answer as aws-sdk-go-v2 returns it: an operation error around
// an HTTP response error (with a request id that must stay out of messages) around the code.
func sdkAPIError(status int, apiErr error) error {
	return &smithy.OperationError{ServiceID: "S3", OperationName: "PutObject", Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
			Err:      apiErr,
		},
		RequestID: "REQ-4f2a",
	}}
}

// sdkSendError wraps a transport failure as the SDK returns it after its attempts.
func sdkSendError(err error) error {
	return &smithy.OperationError{ServiceID: "S3", OperationName: "GetObject", Err: &smithyhttp.RequestSendError{
		Err: &url.Error{Op: "Get", URL: "http://127.0.0.1:1234/drover/vrg/a?x-id=GetObject", Err: err},
	}}
}

func apiErr(code string) error {
	return &smithy.GenericAPIError{Code: code, Message: "the server's words for " + code + "."}
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "Client.Timeout exceeded while awaiting headers" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func testProfile() objectstore.Profile {
	return objectstore.Profile{
		Name: "s3-east", Endpoint: "http://127.0.0.1:1234", Insecure: true, Bucket: "drover", Region: "us-east-1",
		AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "not-a-real-secret",
		SecretNamespace: "drover-system", SecretName: "s3-east",
	}
}

func TestFailuresAreClassifiedByS3CodeAndNetworkError(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1234},
		Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	tests := []struct {
		name         string
		op           string
		err          error
		wantKind     objectstore.Kind
		wantReason   string
		wantSentinel error
		wantIn       []string
		wantNotIn    []string
	}{
		{
			name: "a wrong secret", op: objectstore.OpPut, err: sdkAPIError(403, apiErr("SignatureDoesNotMatch")),
			wantKind: objectstore.KindUnauthorized, wantReason: "StoreUnauthorized", wantSentinel: objectstore.ErrUnauthorized,
			wantIn: []string{
				"S3 profile s3-east at http://127.0.0.1:1234 rejected the credentials in Secret drover-system/s3-east (SignatureDoesNotMatch)",
				"check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
			},
			wantNotIn: []string{"REQ-4f2a", "not-a-real-secret"},
		},
		{
			name: "an unknown access key", op: objectstore.OpGet, err: sdkAPIError(403, apiErr("InvalidAccessKeyId")),
			wantKind: objectstore.KindUnauthorized, wantReason: "StoreUnauthorized", wantSentinel: objectstore.ErrUnauthorized,
			wantIn: []string{"rejected the credentials in Secret drover-system/s3-east (InvalidAccessKeyId)"},
		},
		{
			name: "versitygw's unknown user, a 404 that is no missing object", op: objectstore.OpGet,
			err:      sdkAPIError(404, apiErr("XAdminUserNotFound")),
			wantKind: objectstore.KindUnauthorized, wantReason: "StoreUnauthorized", wantSentinel: objectstore.ErrUnauthorized,
			wantIn: []string{"(XAdminUserNotFound)"},
		},
		{
			name: "access denied by policy", op: objectstore.OpList, err: sdkAPIError(403, apiErr("AccessDenied")),
			wantKind: objectstore.KindUnauthorized, wantReason: "StoreUnauthorized", wantSentinel: objectstore.ErrUnauthorized,
			wantIn: []string{"denied access with the credentials in Secret drover-system/s3-east (AccessDenied)", "may read and write bucket drover"},
		},
		{
			name: "a missing bucket on Put", op: objectstore.OpPut, err: sdkAPIError(404, apiErr("NoSuchBucket")),
			wantKind: objectstore.KindNoSuchBucket, wantReason: "StoreNoSuchBucket", wantSentinel: objectstore.ErrNoSuchBucket,
			wantIn: []string{`S3 profile s3-east at http://127.0.0.1:1234 has no bucket "drover": create the bucket`},
		},
		{
			name: "a missing bucket on List, a modeled error", op: objectstore.OpList, err: sdkAPIError(404, &types.NoSuchBucket{}),
			wantKind: objectstore.KindNoSuchBucket, wantReason: "StoreNoSuchBucket", wantSentinel: objectstore.ErrNoSuchBucket,
		},
		{
			name: "a missing object on Get", op: objectstore.OpGet, err: sdkAPIError(404, &types.NoSuchKey{}),
			wantKind: objectstore.KindNotFound, wantReason: "StoreObjectNotFound", wantSentinel: objectstore.ErrNotFound,
			wantIn: []string{`S3 profile s3-east at http://127.0.0.1:1234 has no object "vrg/a" in bucket drover`},
		},
		{
			name: "a 404 without the NoSuchKey code is not a missing object", op: objectstore.OpGet,
			err:      sdkAPIError(404, apiErr("NotFound")),
			wantKind: objectstore.KindOther, wantReason: "StoreError",
			wantIn: []string{`get "vrg/a" failed: NotFound: the server's words for NotFound`},
		},
		{
			name: "a 403 without a credentials code is not unauthorized", op: objectstore.OpPut,
			err:      sdkAPIError(403, apiErr("QuotaExceeded")),
			wantKind: objectstore.KindOther, wantReason: "StoreError",
		},
		{
			name: "a server error", op: objectstore.OpPut, err: sdkAPIError(500, apiErr("InternalError")),
			wantKind: objectstore.KindOther, wantReason: "StoreError",
			wantIn:    []string{`S3 profile s3-east at http://127.0.0.1:1234: put "vrg/a" failed: InternalError: the server's words for InternalError`},
			wantNotIn: []string{"REQ-4f2a"},
		},
		{
			name: "a refused connection", op: objectstore.OpGet, err: sdkSendError(refused),
			wantKind: objectstore.KindUnreachable, wantReason: "StoreUnreachable", wantSentinel: objectstore.ErrUnreachable,
			wantIn: []string{
				"S3 profile s3-east at http://127.0.0.1:1234 is unreachable (dial 127.0.0.1:1234: connection refused)",
				"check that the store is running and that this cluster can reach its endpoint",
			},
			wantNotIn: []string{"x-id=GetObject", "vrg/a"},
		},
		{
			name: "a name that does not resolve", op: objectstore.OpGet,
			err:      sdkSendError(&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Name: "s3.example.invalid", Err: "no such host", IsNotFound: true}}),
			wantKind: objectstore.KindUnreachable, wantReason: "StoreUnreachable", wantSentinel: objectstore.ErrUnreachable,
			wantIn: []string{"(the name s3.example.invalid does not resolve: no such host)"},
		},
		{
			name: "a timeout", op: objectstore.OpGet, err: sdkSendError(timeoutError{}),
			wantKind: objectstore.KindUnreachable, wantReason: "StoreUnreachable", wantSentinel: objectstore.ErrUnreachable,
			wantIn: []string{"is unreachable (no answer within the timeout)"},
		},
		{
			name: "the caller's deadline", op: objectstore.OpPut, err: fmt.Errorf("operation error S3: PutObject: %w", context.DeadlineExceeded),
			wantKind: objectstore.KindUnreachable, wantReason: "StoreUnreachable", wantSentinel: objectstore.ErrUnreachable,
		},
		{
			name: "a reset connection", op: objectstore.OpGet,
			err:      sdkSendError(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}),
			wantKind: objectstore.KindUnreachable, wantReason: "StoreUnreachable", wantSentinel: objectstore.ErrUnreachable,
			wantIn: []string{"(read: connection reset by peer)"},
		},
		{
			name: "a connection lost in the middle of a body", op: objectstore.OpGet,
			err:      fmt.Errorf("failed to read response body: %w", io.ErrUnexpectedEOF),
			wantKind: objectstore.KindUnreachable, wantReason: "StoreUnreachable", wantSentinel: objectstore.ErrUnreachable,
			wantIn: []string{"is unreachable (the connection closed without a complete answer)"},
		},
		{
			name: "the caller cancelled", op: objectstore.OpGet, err: sdkSendError(context.Canceled),
			wantKind: objectstore.KindOther, wantReason: "StoreError",
		},
		{
			name: "a certificate this client does not trust", op: objectstore.OpGet,
			err:      sdkSendError(x509.UnknownAuthorityError{}),
			wantKind: objectstore.KindOther, wantReason: "StoreError",
			wantIn: []string{"certificate signed by unknown authority"},
		},
	}
	store, err := objectstore.NewS3(testProfile())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := objectstore.Fail(store, tt.op, "vrg/a", tt.err)
			var storeErr *objectstore.Error
			g.Expect(errors.As(err, &storeErr)).To(BeTrue())
			g.Expect(storeErr.Kind).To(Equal(tt.wantKind), "kind of %v", tt.err)
			g.Expect(storeErr.Reason()).To(Equal(tt.wantReason))
			g.Expect(objectstore.KindOf(err)).To(Equal(tt.wantKind))
			g.Expect(objectstore.ReasonOf(err)).To(Equal(tt.wantReason))
			g.Expect(errors.Is(err, tt.err)).To(BeTrue(), "the SDK's error stays in the chain")
			for _, s := range []error{objectstore.ErrNotFound, objectstore.ErrUnreachable, objectstore.ErrUnauthorized, objectstore.ErrNoSuchBucket} {
				g.Expect(errors.Is(err, s)).To(Equal(errors.Is(s, tt.wantSentinel)), "errors.Is(err, %v)", s)
			}
			for _, s := range tt.wantIn {
				g.Expect(err.Error()).To(ContainSubstring(s))
			}
			for _, s := range append(tt.wantNotIn, "not-a-real-secret") {
				g.Expect(err.Error()).NotTo(ContainSubstring(s))
			}
		})
	}
}

func TestUnauthorizedWithoutASecretNamesTheProfile(t *testing.T) {
	g := NewWithT(t)
	p := testProfile()
	p.SecretNamespace, p.SecretName = "", ""
	store, err := objectstore.NewS3(p)
	g.Expect(err).NotTo(HaveOccurred())
	err = objectstore.Fail(store, objectstore.OpPut, "k", sdkAPIError(403, apiErr("SignatureDoesNotMatch")))
	g.Expect(err).To(MatchError(
		"S3 profile s3-east at http://127.0.0.1:1234 rejected its credentials (SignatureDoesNotMatch): check the access key ID and secret access key"))
}

func TestKindOfPlainErrors(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want objectstore.Kind
	}{
		{"no error", nil, objectstore.KindOther},
		{"a plain error", errors.New("boom"), objectstore.KindOther},
		{"ErrNotFound", objectstore.ErrNotFound, objectstore.KindNotFound},
		{"a wrapped ErrUnreachable", fmt.Errorf("reading vrg/a: %w", objectstore.ErrUnreachable), objectstore.KindUnreachable},
		{"ErrUnauthorized", objectstore.ErrUnauthorized, objectstore.KindUnauthorized},
		{"ErrNoSuchBucket", objectstore.ErrNoSuchBucket, objectstore.KindNoSuchBucket},
		{"ErrInvalidProfile", objectstore.ErrInvalidProfile, objectstore.KindInvalidProfile},
		{"a wrapped *Error", fmt.Errorf("wrapped: %w", &objectstore.Error{Kind: objectstore.KindUnreachable}), objectstore.KindUnreachable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(objectstore.KindOf(tt.err)).To(Equal(tt.want))
			g.Expect(objectstore.ReasonOf(tt.err)).To(Equal(tt.want.Reason()))
		})
	}
}
