package lab

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCheckPortFreeNamesThePortAndItsUser(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	err = checkPortFree(port, "east kube-apiserver")
	if err == nil {
		t.Fatal("a port in use must be reported")
	}
	for _, want := range []string{fmt.Sprint(port), "east kube-apiserver", "drover lab down"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestUpWithoutBinariesSaysWhatToBuild(t *testing.T) {
	dir := t.TempDir()
	l, err := New(Options{Dir: filepath.Join(dir, "lab"), BinDir: filepath.Join(dir, "nobin"), DroverBinary: "/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Up(t.Context())
	if err == nil {
		t.Fatal("up without binaries must fail")
	}
	if !strings.Contains(err.Error(), "make tools") || !strings.Contains(err.Error(), "etcd") {
		t.Errorf("error %q should name the missing binary and `make tools`", err)
	}
	if err := l.Down(); err != nil {
		t.Fatalf("down after a failed up: %v", err)
	}
	if _, err := os.Stat(l.Dir()); !os.IsNotExist(err) {
		t.Errorf("down must remove the lab directory, stat says %v", err)
	}
}

func TestComponentOfRecognisesEveryLabProcess(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"a control-plane binary is named by its file", []string{"/x/bin/kube-apiserver", "--secure-port=1"}, componentAPIServer},
		{"drover running the storage verb is lab storage", []string{"/x/bin/drover", "lab", storageControllerVerb, "--cluster=east"}, componentStorage},
		{"the lab's Prometheus is named by its file", []string{"/x/bin/prometheus", "--config.file=/lab/prometheus/prometheus.yml"}, componentPrometheus},
		{"versitygw is the S3 server", []string{"/x/bin/versitygw", "--port=127.0.0.1:1", "posix", "/lab/east/s3/data"}, componentS3},
		{"drover running the kubelet verb is the lab kubelet", []string{"/x/bin/drover", "lab", kubeletVerb, "--kubeconfig=/lab/east/kubeconfig"}, componentKubelet},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := componentOf(tt.args)
			if got != tt.want {
				t.Errorf("componentOf(%v) = %q, want %q", tt.args, got, tt.want)
			}
			if !slices.Contains(componentNames, got) {
				t.Errorf("%q is not among the lab's components: findProcesses, and so `lab down`, would miss it", got)
			}
		})
	}
	if !isLabCLI([]string{"drover", "lab", "down", "--dir=/x"}) {
		t.Error("a `drover lab down` CLI must not be taken for a lab component")
	}
	if isLabCLI([]string{"drover", "lab", kubeletVerb, "--kubeconfig=/lab/east/kubeconfig"}) {
		t.Error("the lab kubelet is a component, not a CLI")
	}
}

func TestAProcessBelongsToTheClusterItWorksInNotToItsPeer(t *testing.T) {
	storage := []string{"/x/bin/drover", "lab", storageControllerVerb, "--cluster=east",
		"--data-dir=/lab/east/storage", "--peer-data-dir=/lab/west/storage"}
	if !namesOwnPath(storage, "/lab/east/") {
		t.Error("east's storage controller must belong to east")
	}
	if namesOwnPath(storage, "/lab/west/") {
		t.Error("east's storage controller must not belong to west, which it only mirrors to")
	}
	if !namesOwnPath(storage, "/lab/") {
		t.Error("every process of the lab must be found by the lab directory (lab down)")
	}
}
