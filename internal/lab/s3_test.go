package lab_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/objectstore"
)

// s3Client returns a client for profile with the given credentials. It is built from explicit
// options rather than the SDK's config loader, so nothing of this machine's environment
// (AWS_CA_BUNDLE, AWS_PROFILE) or ~/.aws reaches it.
func s3Client(p lab.S3Profile, accessKeyID, secretAccessKey string) *s3.Client {
	return s3.New(s3.Options{
		Region:                     p.Region,
		BaseEndpoint:               aws.String(p.Endpoint),
		Credentials:                credentials.NewStaticCredentialsProvider(accessKeyID, secretAccessKey, ""),
		UsePathStyle:               true,
		HTTPClient:                 &http.Client{Timeout: 5 * time.Second},
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		// A refused connection is the answer a test wants to see, not something to retry.
		RetryMaxAttempts: 1,
	})
}

func s3Profile(g Gomega, cluster string) lab.S3Profile {
	profiles, err := testLab.S3Profiles()
	g.Expect(err).NotTo(HaveOccurred())
	for _, p := range profiles {
		if p.Name == "s3-"+cluster {
			return p
		}
	}
	g.Expect(cluster).To(BeEmpty(), "no S3 profile for cluster")
	return lab.S3Profile{}
}

func putObject(ctx context.Context, p lab.S3Profile, key string, body []byte) error {
	_, err := s3Client(p, p.AccessKeyID, p.SecretAccessKey).PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(p.Bucket), Key: aws.String(key), Body: bytes.NewReader(body),
	})
	return err
}

func getObject(ctx context.Context, p lab.S3Profile, key string) ([]byte, error) {
	out, err := s3Client(p, p.AccessKeyID, p.SecretAccessKey).GetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(p.Bucket), Key: aws.String(key),
	})
	if err != nil {
		return nil, err
	}
	defer func() { _ = out.Body.Close() }()
	return io.ReadAll(out.Body)
}

func apiErrorCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

func TestEachManagedClusterHasAnS3ServerThatRoundTripsObjectsOnDisk(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	profiles, err := testLab.S3Profiles()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(profiles).To(HaveLen(2))
	for _, p := range profiles {
		g.Expect(p.Bucket).To(Equal(lab.S3Bucket))
		g.Expect(p.Region).To(Equal(lab.S3Region))
		g.Expect(p.Endpoint).To(HavePrefix("http://127.0.0.1:"))

		body := []byte(rand.Text() + strings.Repeat("x", 256<<10))
		key := "roundtrip/" + p.Name + ".bin"
		g.Expect(putObject(ctx, p, key, body)).To(Succeed(), "put to %s", p.Name)
		got, err := getObject(ctx, p, key)
		g.Expect(err).NotTo(HaveOccurred(), "get from %s", p.Name)
		g.Expect(bytes.Equal(got, body)).To(BeTrue(), "%s returns the bytes it was given", p.Name)

		c, err := testLab.Cluster(strings.TrimPrefix(p.Name, "s3-"))
		g.Expect(err).NotTo(HaveOccurred())
		onDisk, err := os.ReadFile(filepath.Join(c.Dir(), "s3", "data", p.Bucket, key))
		g.Expect(err).NotTo(HaveOccurred(), "the object of %s lives under its cluster's directory", p.Name)
		g.Expect(bytes.Equal(onDisk, body)).To(BeTrue())
	}
	g.Expect(profiles[0].AccessKeyID).NotTo(Equal(profiles[1].AccessKeyID), "every profile has its own credentials")
}

func TestS3ServersRejectWrongCredentials(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	east, west := s3Profile(g, lab.East), s3Profile(g, lab.West)
	tests := []struct {
		name                   string
		server                 lab.S3Profile
		accessKeyID, secretKey string
		wantCode               string
	}{
		{"an unknown access key", east, "LABNOSUCHKEY000000000", east.SecretAccessKey, "InvalidAccessKeyId"},
		{"the right access key with a wrong secret", east, east.AccessKeyID, "wrong" + east.SecretAccessKey, "SignatureDoesNotMatch"},
		{"another cluster's credentials", west, east.AccessKeyID, east.SecretAccessKey, "InvalidAccessKeyId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := s3Client(tt.server, tt.accessKeyID, tt.secretKey).ListObjectsV2(ctx, &s3.ListObjectsV2Input{
				Bucket: aws.String(tt.server.Bucket),
			})
			g.Expect(err).To(HaveOccurred())
			g.Expect(apiErrorCode(err)).To(Equal(tt.wantCode), "error: %v", err)
		})
	}
}

func TestS3ServerIsUnreachableWhileItsClusterIsStoppedAndKeepsItsObjects(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	east := s3Profile(g, lab.East)
	body := []byte("written before east was lost: " + rand.Text())
	g.Expect(putObject(ctx, east, "survives-stop", body)).To(Succeed())
	westPIDs := componentPIDs(findStatus(g, ctx, lab.West))

	g.Expect(testLab.Stop(lab.East)).To(Succeed())
	_, err := getObject(ctx, east, "survives-stop")
	g.Expect(err).To(HaveOccurred(), "east's S3 server must be unreachable once east is stopped")
	g.Expect(errors.Is(err, syscall.ECONNREFUSED)).To(BeTrue(), "a refused connection, got %v", err)
	west := s3Profile(g, lab.West)
	_, err = s3Client(west, west.AccessKeyID, west.SecretAccessKey).HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(west.Bucket)})
	g.Expect(err).NotTo(HaveOccurred(), "west's S3 server is not affected by east's loss")

	g.Expect(testLab.Start(ctx, lab.East)).To(Succeed())
	g.Expect(s3Profile(g, lab.East)).To(Equal(east), "east keeps its endpoint and credentials")
	got, err := getObject(ctx, east, "survives-stop")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(body))
	g.Expect(componentPIDs(findStatus(g, ctx, lab.West))).To(Equal(westPIDs),
		"stopping and starting east leaves every process of west alone, its storage controller included")
}

func componentPIDs(st lab.ClusterStatus) map[string]int {
	pids := map[string]int{}
	for _, cs := range st.Components {
		pids[cs.Name] = cs.PID
	}
	return pids
}

func TestEveryClusterHoldsASecretPerS3Profile(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	profiles, err := testLab.S3Profiles()
	g.Expect(err).NotTo(HaveOccurred())
	for _, cluster := range []string{lab.Hub, lab.East, lab.West} {
		cl := clusterClient(g, cluster)
		for _, p := range profiles {
			secret := &corev1.Secret{}
			g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: lab.S3SecretNamespace, Name: p.Name}, secret)).
				To(Succeed(), "cluster %s has Secret %s", cluster, p.Name)
			g.Expect(secret.Data).To(Equal(map[string][]byte{
				lab.S3SecretAccessKeyIDKey:      []byte(p.AccessKeyID),
				lab.S3SecretSecretAccessKeyKey:  []byte(p.SecretAccessKey),
				lab.S3SecretEndpointKey:         []byte(p.Endpoint),
				lab.S3SecretBucketKey:           []byte(p.Bucket),
				lab.S3SecretRegionKey:           []byte(p.Region),
				lab.S3SecretInsecureKey:         []byte("true"),
				objectstore.SecretStoreKeysKey:  p.StoreKeys.SecretData()[objectstore.SecretStoreKeysKey],
				objectstore.SecretStoreKeyIDKey: []byte(p.StoreKeys.Current),
			}), "Secret %s on cluster %s", p.Name, cluster)
		}
	}
}

func TestStatusShowsEachManagedClustersS3Server(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	statuses, err := testLab.Status(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	for _, st := range statuses {
		if st.Role == lab.RoleHub {
			g.Expect(st.S3Endpoint).To(BeEmpty())
			continue
		}
		g.Expect(st.S3Endpoint).To(Equal(s3Profile(g, st.Name).Endpoint))
		g.Expect(st.Components).To(ContainElement(And(
			HaveField("Name", "s3"), HaveField("Running", true),
		)), "cluster %s", st.Name)
	}
	var out strings.Builder
	g.Expect(lab.PrintStatus(&out, statuses, true)).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("S3 ENDPOINT"))
	g.Expect(out.String()).To(ContainSubstring(s3Profile(g, lab.East).Endpoint))
}
