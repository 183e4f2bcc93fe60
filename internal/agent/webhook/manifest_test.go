package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
)

// fenceManifest is where the release manifests declare the fence's configuration.
const fenceManifest = "../../../config/agent/base/fence.yaml"

// TestTheReleaseManifestDeclaresTheConfigurationTheAgentInstallsInTheLab keeps the two ways the
// fence is configured alike: the release manifests own drover-fence (the agent injects only its
// caBundle), the lab's agent applies it itself with a URL. Only the client config may differ.
func TestTheReleaseManifestDeclaresTheConfigurationTheAgentInstallsInTheLab(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile(filepath.Clean(fenceManifest))
	g.Expect(err).NotTo(HaveOccurred())
	var manifest *admissionregistrationv1.ValidatingWebhookConfiguration
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		var doc admissionregistrationv1.ValidatingWebhookConfiguration
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		g.Expect(err).NotTo(HaveOccurred())
		if doc.Kind == "ValidatingWebhookConfiguration" {
			manifest = &doc
		}
	}
	g.Expect(manifest).NotTo(BeNil(), "%s declares no ValidatingWebhookConfiguration", fenceManifest)
	g.Expect(manifest.Name).To(Equal(ConfigurationName))

	service := &admissionregistrationv1.ServiceReference{
		Namespace: "drover-system", Name: "drover-fence", Path: ptr.To(Path), Port: ptr.To[int32](443),
	}
	ac, err := configuration(Options{Service: service, CABundle: []byte("injected")})
	g.Expect(err).NotTo(HaveOccurred())
	encoded, err := json.Marshal(ac)
	g.Expect(err).NotTo(HaveOccurred())
	var agent admissionregistrationv1.ValidatingWebhookConfiguration
	g.Expect(json.Unmarshal(encoded, &agent)).To(Succeed())
	agent.Webhooks[0].ClientConfig.CABundle = nil
	g.Expect(manifest.Webhooks).To(Equal(agent.Webhooks))
}
