package kubelet

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
)

func TestExpandFollowsKubernetesRules(t *testing.T) {
	env := map[string]string{"POD_IP": "127.100.0.2", "EMPTY": ""}
	for _, tc := range []struct{ name, in, want string }{
		{"a known variable is replaced", "--bind=$(POD_IP):8081", "--bind=127.100.0.2:8081"},
		{"an unknown variable is left as written", "$(NOPE)/x", "$(NOPE)/x"},
		{"a doubled dollar escapes a reference", "$$(POD_IP)", "$(POD_IP)"},
		{"an empty value is still a value", "a$(EMPTY)b", "ab"},
		{"an unterminated reference is kept", "x$(POD_IP", "x$(POD_IP"},
		{"a lone dollar stays", "cost $5", "cost $5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(expand(tc.in, env)).To(Equal(tc.want))
		})
	}
}

func TestImageBinaryMatchesNameWithoutTag(t *testing.T) {
	images := map[string]string{"registry.example.com/team/drover": "/bin/drover", "podprobe": "/bin/podprobe"}
	for _, tc := range []struct {
		image, want string
		ok          bool
	}{
		{"registry.example.com/team/drover:v0.3.0", "/bin/drover", true},
		{"registry.example.com/team/drover@sha256:abc", "/bin/drover", true},
		{"localhost:5000/lab/podprobe:dev", "/bin/podprobe", true},
		{"localhost:5000/lab/podprobe", "/bin/podprobe", true},
		{"docker.io/library/nginx:1.29", "", false},
	} {
		t.Run(tc.image, func(t *testing.T) {
			g := NewWithT(t)
			bin, ok := imageBinary(images, tc.image)
			g.Expect(ok).To(Equal(tc.ok))
			g.Expect(bin).To(Equal(tc.want))
		})
	}
}

func TestArgvUsesTheImageBinaryForTheEntrypoint(t *testing.T) {
	g := NewWithT(t)
	env := map[string]string{"NS": "drover-system"}
	g.Expect(argv("/b/drover", &corev1.Container{Args: []string{"hub", "--namespace=$(NS)"}}, env)).
		To(Equal([]string{"/b/drover", "hub", "--namespace=drover-system"}))
	g.Expect(argv("/b/drover", &corev1.Container{Command: []string{"/drover", "agent"}, Args: []string{"-v"}}, env)).
		To(Equal([]string{"/b/drover", "agent", "-v"}))
}

func TestWriteAtomicSwapsContentAndDropsStaleFiles(t *testing.T) {
	g := NewWithT(t)
	dir := filepath.Join(t.TempDir(), "vol")
	g.Expect(writeAtomic(dir, map[string][]byte{"tls.crt": []byte("a"), "tls.key": []byte("k")})).To(Succeed())
	first, err := os.Readlink(filepath.Join(dir, dataDir))
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(writeAtomic(dir, map[string][]byte{"tls.crt": []byte("a"), "tls.key": []byte("k")})).To(Succeed())
	same, _ := os.Readlink(filepath.Join(dir, dataDir))
	g.Expect(same).To(Equal(first), "unchanged content is not rewritten")

	g.Expect(writeAtomic(dir, map[string][]byte{"tls.crt": []byte("b"), "sub/ca.crt": []byte("c")})).To(Succeed())
	g.Expect(os.ReadFile(filepath.Join(dir, "tls.crt"))).To(BeEquivalentTo("b"))
	g.Expect(os.ReadFile(filepath.Join(dir, "sub", "ca.crt"))).To(BeEquivalentTo("c"))
	_, err = os.Stat(filepath.Join(dir, "tls.key"))
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "a key gone from the secret is gone from the volume")
	_, err = os.Stat(filepath.Join(dir, first))
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "the previous data directory is removed")
}

func TestNarrowWildcardBindsOnlyTouchesDeclaredPorts(t *testing.T) {
	c := &corev1.Container{Ports: []corev1.ContainerPort{{ContainerPort: 8081}, {ContainerPort: 8443}, {ContainerPort: 9443}}}
	for _, tc := range []struct{ name, in, want string }{
		{"a flag on all addresses is narrowed", "--health-probe-bind-address=:8081", "--health-probe-bind-address=127.100.0.7:8081"},
		{"0.0.0.0 is all addresses", "--metrics-bind-address=0.0.0.0:8443", "--metrics-bind-address=127.100.0.7:8443"},
		{"an IPv6 wildcard is all addresses", "--webhook-address=[::]:9443", "--webhook-address=127.100.0.7:9443"},
		{"a value on its own is narrowed", ":9443", "127.100.0.7:9443"},
		{"an undeclared port is left alone", "--pprof=:6060", "--pprof=:6060"},
		{"a specific address is left alone", "--metrics-bind-address=127.0.0.1:8443", "--metrics-bind-address=127.0.0.1:8443"},
		{"a disabled endpoint is left alone", "--metrics-bind-address=0", "--metrics-bind-address=0"},
		{"a subcommand is left alone", "agent", "agent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(narrowWildcardBinds([]string{tc.in}, c, "127.100.0.7")).To(Equal([]string{tc.want}))
		})
	}
}

func TestTokenIsRefreshedAfterFourFifthsOfItsLifetime(t *testing.T) {
	g := NewWithT(t)
	issued := time.Now()
	tok := &tokenFile{token: "t", issued: issued, lifetime: time.Hour}
	g.Expect(tok.fresh(issued.Add(47 * time.Minute))).To(BeTrue())
	g.Expect(tok.fresh(issued.Add(49 * time.Minute))).To(BeFalse())
	var none *tokenFile
	g.Expect(none.fresh(issued)).To(BeFalse())
}
