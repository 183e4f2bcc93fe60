package join

import (
	"bytes"
	"strings"
	"testing"

	"github.com/drover-io/drover/internal/objectstore"
)

func TestThePolicyHintIsLeftOutForACallerThatWritesThePolicies(t *testing.T) {
	for _, tc := range []struct {
		noHint bool
		want   string
	}{
		{false, "Every DRPolicy that pairs it must define its S3 profile in spec.s3Profiles:\ns3Profiles:\n- bucket: drover"},
		{true, ""},
	} {
		var out bytes.Buffer
		o := Options{Name: "east", Namespace: "drover-system", Out: &out, NoPolicyHint: tc.noHint,
			S3: objectstore.Profile{Name: "s3-east", Endpoint: "https://s3.example.com", Bucket: "drover"}}
		o.printPolicyHint()
		if got := out.String(); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("NoPolicyHint %v printed %q, want it to contain %q", tc.noHint, got, tc.want)
		}
	}
}
