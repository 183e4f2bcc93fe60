// Command podprobe is the lab kubelet's test workload: it reports what a pod's process sees
// (environment, working directory, in-cluster configuration, mounted files, what its
// ServiceAccount may do) as one "REPORT {json}" line, then serves /readyz and /file on --bind.
// With --exit it is a Job's process instead: it logs --lines lines, writes --message to its
// termination message file and exits with that code.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Report is what the test reads back from the container's log.
type Report struct {
	Env         map[string]string `json:"env"`
	WorkDir     string            `json:"workDir"`
	Args        []string          `json:"args"`
	SANamespace string            `json:"saNamespace"`
	ConfigError string            `json:"configError,omitempty"`
	GetOwnPod   string            `json:"getOwnPod"`
	ListSecrets string            `json:"listSecrets"`
	Files       map[string]string `json:"files"`
	Writes      map[string]string `json:"writes"`
	// IDs is the process's identity: "uid=U gid=G groups=[...]".
	IDs string `json:"ids"`
}

func main() {
	bind := flag.String("bind", "", "address to serve /readyz and /file on")
	files := flag.String("file", "", "a file to report")
	writes := flag.String("write", "", "comma-separated files to try to write")
	unhealthyAfter := flag.Duration("unhealthy-after", 0, "when set, /healthz fails once the process ran this long")
	exit := flag.Int("exit", -1, "when 0 or more, log --lines lines, write --message and exit with this code")
	lines := flag.Int("lines", 0, "with --exit, how many numbered lines to log")
	width := flag.Int("width", 8, "with --exit, the length of each logged line (at least 8)")
	message := flag.String("message", "", "with --exit, what to write to --message-file")
	messageFile := flag.String("message-file", "/dev/termination-log", "the container's terminationMessagePath")
	flag.Parse()
	if *exit >= 0 {
		for i := 1; i <= *lines; i++ {
			fmt.Printf("line %03d%s\n", i, strings.Repeat(".", max(*width-8, 0)))
		}
		if *message != "" {
			if err := os.WriteFile(*messageFile, []byte(*message), 0o600); err != nil {
				fmt.Println("write message:", err)
			}
		}
		os.Exit(*exit)
	}
	r := Report{Env: map[string]string{}, Args: os.Args[1:], Files: map[string]string{}, Writes: map[string]string{}}
	for _, path := range strings.Split(*writes, ",") {
		if path == "" {
			continue
		}
		r.Writes[path] = "ok"
		if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
			r.Writes[path] = err.Error()
		}
	}
	for _, name := range []string{"POD_NAME", "POD_NAMESPACE", "NODE_NAME", "POD_IP", "PASSWORD", "LITERAL", "EXPANDED",
		"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "HOSTNAME", "HOME"} {
		r.Env[name] = os.Getenv(name)
	}
	r.WorkDir, _ = os.Getwd()
	groups, _ := os.Getgroups()
	r.IDs = fmt.Sprintf("uid=%d gid=%d groups=%v", os.Getuid(), os.Getgid(), groups)
	ns, _ := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	r.SANamespace = string(ns)
	if *files != "" {
		data, err := os.ReadFile(*files)
		r.Files[*files] = string(data)
		if err != nil {
			r.Files[*files] = "error: " + err.Error()
		}
	}
	inCluster(&r)
	out, _ := json.Marshal(r)
	fmt.Printf("REPORT %s\n", out)
	serve(*bind, *unhealthyAfter)
}

// inCluster uses rest.InClusterConfig as drover does: get its own pod (allowed) and list
// secrets (not allowed).
func inCluster(r *Report) {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		r.ConfigError = err.Error()
		return
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		r.ConfigError = err.Error()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ns := os.Getenv("POD_NAMESPACE")
	r.GetOwnPod = outcome(cs.CoreV1().Pods(ns).Get(ctx, os.Getenv("POD_NAME"), metav1.GetOptions{}))
	r.ListSecrets = outcome(cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}))
}

func outcome[T any](_ T, err error) string {
	switch {
	case err == nil:
		return "ok"
	case apierrors.IsForbidden(err):
		return "forbidden"
	default:
		return "error: " + err.Error()
	}
}

func serve(bind string, unhealthyAfter time.Duration) {
	start := time.Now()
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if unhealthyAfter > 0 && time.Since(start) > unhealthyAfter {
			http.Error(w, "unhealthy", http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/file", func(w http.ResponseWriter, req *http.Request) {
		data, err := os.ReadFile(req.URL.Query().Get("path"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		_, _ = w.Write(data)
	})
	srv := &http.Server{Addr: bind, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM)
		<-sig
		fmt.Println("SIGTERM received, stopping")
		_ = srv.Close()
	}()
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		fmt.Println("serve:", err)
		os.Exit(1)
	}
}
