package day2

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/drover-io/drover/internal/cli"
)

func TestTheRedactorKeepsASecretsKeysAndScrubsItsValuesEverywhere(t *testing.T) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["east"] = &clientcmdapi.Cluster{Server: "https://east.example:6443"}
	kc.AuthInfos["hub"] = &clientcmdapi.AuthInfo{Token: "kubeconfig-token-0123456789"}
	kc.Contexts["east"] = &clientcmdapi.Context{Cluster: "east", AuthInfo: "hub"}
	kc.CurrentContext = "east"
	raw, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "s3", "namespace": "drover-system", "annotations": map[string]any{
			lastApplied: `{"stringData":{"AWS_SECRET_ACCESS_KEY":"s3-secret-key-abcdef"}}`, "keep": "me"},
			"managedFields": []any{map[string]any{"manager": "kubectl"}}},
		"data": map[string]any{
			"AWS_SECRET_ACCESS_KEY": base64.StdEncoding.EncodeToString([]byte("s3-secret-key-abcdef")),
			"AWS_S3_ENDPOINT":       base64.StdEncoding.EncodeToString([]byte("http://127.0.0.1:9000")),
			"kubeconfig":            base64.StdEncoding.EncodeToString(raw),
			"short":                 base64.StdEncoding.EncodeToString([]byte("abc")),
			"namespace":             base64.StdEncoding.EncodeToString([]byte("drover-system")),
		},
		"stringData": map[string]any{"token": "string-data-token-42"},
	}}
	pod := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "env": []any{
			map[string]any{"name": "PASSWORD", "value": "literal-env-password"},
			map[string]any{"name": "FROM_SECRET", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "s", "key": "k"}}},
		}}}},
	}}
	r := newRedactor()
	r.object(secret)
	r.object(pod)
	out, err := yaml.Marshal([]any{secret.Object, pod.Object})
	if err != nil {
		t.Fatal(err)
	}
	log := []byte("dial with token kubeconfig-token-0123456789 and key " + base64.StdEncoding.EncodeToString([]byte("s3-secret-key-abcdef")) +
		" to http://127.0.0.1:9000\n")
	all := string(r.scrub(append(out, log...)))

	for _, leaked := range []string{"s3-secret-key-abcdef", "kubeconfig-token-0123456789", "string-data-token-42", "literal-env-password",
		base64.StdEncoding.EncodeToString([]byte("s3-secret-key-abcdef")), base64.StdEncoding.EncodeToString(raw), "manager: kubectl"} {
		if strings.Contains(all, leaked) {
			t.Errorf("the redacted output holds %q:\n%s", leaked, all)
		}
	}
	for _, kept := range []string{"AWS_SECRET_ACCESS_KEY: <redacted> (20 bytes)", "kubeconfig: <redacted> (", "short: <redacted> (3 bytes)",
		"keep: me", "secretKeyRef", "namespace: drover-system", "apiVersion: v1", "dial with token <redacted> and key <redacted> to http://127.0.0.1:9000"} {
		if !strings.Contains(all, kept) {
			t.Errorf("the redacted output lacks %q:\n%s", kept, all)
		}
	}
}

func TestAClusterKubeconfigFlagNeedsANameAndAFile(t *testing.T) {
	var k ClusterKubeconfigs
	for _, bad := range []string{"east", "=file", "east="} {
		if err := k.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted it", bad)
		}
	}
	if err := k.Set("east=/tmp/east.kubeconfig"); err != nil || k["east"] != "/tmp/east.kubeconfig" {
		t.Errorf("Set(east=...) gave %v, %v", k, err)
	}
}

func TestValidatePrintsATableAndFailsOnAFailedCheck(t *testing.T) {
	v := &validator{now: time.Now}
	v.add("east: clock", Pass, "within a second of this machine's")
	v.add("west: StorageClass lab-file (VolSync, day2)", Fail, "no such StorageClass on west")
	var out bytes.Buffer
	err := v.finish(&out, "")
	want := `CHECK                                        RESULT  DETAIL
east: clock                                  pass    within a second of this machine's
west: StorageClass lab-file (VolSync, day2)  fail    no such StorageClass on west
`
	if out.String() != want {
		t.Errorf("validate printed:\n%s\nwant:\n%s", out.String(), want)
	}
	if err == nil || cli.ExitCodeOf(err) != cli.ExitFailed {
		t.Errorf("a failed check returned %v (exit %d), want exit %d", err, cli.ExitCodeOf(err), cli.ExitFailed)
	}
	if err := (&validator{rows: v.rows[:1]}).finish(&out, "json"); err != nil {
		t.Errorf("checks that pass returned %v", err)
	}
}

func TestSkewWordsSayAheadOrBehind(t *testing.T) {
	for skew, want := range map[time.Duration]string{0: "within a second of", 3 * time.Second: "3s ahead of", -2 * time.Minute: "2m0s behind"} {
		if got := skewWords(skew); got != want {
			t.Errorf("skewWords(%s) = %q, want %q", skew, got, want)
		}
	}
}
