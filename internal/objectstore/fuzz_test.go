package objectstore_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/internal/objectstore"
)

// FuzzProfileFromSecret feeds ProfileFromSecret what a person may put in a profile's Secret: it
// must never panic, a profile it accepts is valid, and neither its errors nor the profile's
// printed form (both reach conditions, events and logs) ever repeat the secret key.
func FuzzProfileFromSecret(f *testing.F) {
	f.Add("https://s3.example.com:9000", "drover", "us-east-1", "AKIAEXAMPLE", "wJalrXUtnFEMI/K7MDENG")
	f.Add("s3.example.com", "drover", "", "AKIAEXAMPLE", "wJalrXUtnFEMI/K7MDENG")
	f.Add("http://[::1]:9000\n", " ", "\t", "", "secret-with-newline\n")
	f.Add("https://user:wJalrXUtnFEMI@s3/", "b", "r", "a", "wJalrXUtnFEMI")
	f.Fuzz(func(t *testing.T, endpoint, bucket, region, keyID, secretKey string) {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "drover-system", Name: "s3-east"}, Data: map[string][]byte{
			objectstore.SecretEndpointKey: []byte(endpoint), objectstore.SecretBucketKey: []byte(bucket),
			objectstore.SecretRegionKey: []byte(region), objectstore.SecretAccessKeyIDKey: []byte(keyID),
			objectstore.SecretSecretAccessKeyKey: []byte(secretKey),
		}}
		// A secret key that also appears in a value printed on purpose cannot be told apart.
		key := strings.TrimSpace(secretKey)
		checkable := len(key) >= 8 && !strings.Contains(endpoint+bucket+region+keyID+"drover-system/s3-east east", key)
		p, err := objectstore.ProfileFromSecret("east", secret)
		if err != nil {
			if checkable && strings.Contains(err.Error(), key) {
				t.Fatalf("the error repeats the secret key: %v", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("accepted a profile that is not valid: %v", err)
		}
		if checkable && (strings.Contains(p.String(), key) || strings.Contains(p.GoString(), key)) {
			t.Fatalf("the printed profile repeats the secret key: %s", p)
		}
	})
}
