package lab

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"time"
)

const componentAPIServer = "kube-apiserver"

// apiServerStep is the cluster's kube-apiserver, ready once it answers /readyz; the lab then
// bootstraps the cluster (bootstrap.go) before the next component starts.
func (c *Cluster) apiServerStep() step {
	p := c.pki()
	return step{
		component: component{name: componentAPIServer, binary: c.bin("kube-apiserver"), env: c.apiServerEnv(), args: append([]string{
			"--etcd-servers=" + fmt.Sprintf("http://127.0.0.1:%d", c.Ports.Etcd),
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			fmt.Sprintf("--secure-port=%d", c.Ports.APIServer),
			"--cert-dir=" + p.dir,
			"--tls-cert-file=" + p.path("apiserver.crt"),
			"--tls-private-key-file=" + p.path("apiserver.key"),
			"--client-ca-file=" + p.path("ca.crt"),
			// pods/exec reaches the lab kubelet at the Node's InternalIP and kubelet port, over
			// TLS checked both ways against the cluster's CA (pki.go, ensureKubeletCerts).
			"--kubelet-client-certificate=" + p.path("apiserver-kubelet-client.crt"),
			"--kubelet-client-key=" + p.path("apiserver-kubelet-client.key"),
			"--kubelet-certificate-authority=" + p.path("ca.crt"),
			"--kubelet-preferred-address-types=InternalIP",
			"--service-account-issuer=" + c.Endpoint(),
			"--service-account-key-file=" + p.path("sa.pub"),
			"--service-account-signing-key-file=" + p.path("sa.key"),
			"--service-cluster-ip-range=10.96.0.0/16",
			"--authorization-mode=RBAC",
			"--allow-privileged=true",
			// Pods run on fake nodes and never use a token; the plugin would only add a race
			// between a namespace's creation and its default ServiceAccount.
			"--disable-admission-plugins=ServiceAccount",
			// /debug/pprof for the lab's administrator (kubectl get --raw), to find where an API
			// server's CPU goes under drover's load (docs/benchmarks.md, "Where the settled CPU goes").
			"--profiling=true",
			// The endpoint reconciler refuses a loopback advertise address; the lab has no
			// in-cluster clients that would use the kubernetes Service anyway.
			"--endpoint-reconciler-type=none",
		}, c.auditArgs()...)},
		ready: func(ctx context.Context, sc *startContext, comp component, pid int) error {
			if err := c.waitReady(ctx, comp, pid, c.apiServerReady); err != nil {
				return err
			}
			c.lab.progress("%s: kube-apiserver ready at %s (%.1f s)", c.Name, c.Endpoint(), time.Since(sc.stepBegan).Seconds())
			return c.bootstrap(ctx)
		},
	}
}

// apiServerEnv keeps the API server's webhook calls off the machine's proxy when drover's fence
// is reached through its Service.
func (c *Cluster) apiServerEnv() []string {
	if c.lab.opts.RunDrover {
		return noProxyEnv
	}
	return nil
}

func (c *Cluster) apiServerReady(ctx context.Context) error {
	client, err := c.adminHTTPClient()
	if err != nil {
		return err
	}
	_, err = httpGet(ctx, client, c.Endpoint()+"/readyz")
	return err
}

// adminHTTPClient is an HTTP client that trusts the cluster's CA and authenticates as admin.
func (c *Cluster) adminHTTPClient() (*http.Client, error) {
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil {
		return nil, fmt.Errorf("failed to load admin client certificate of %s: %w", c.Name, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cfg.CAData) {
		return nil, errors.New("lab CA is not valid PEM")
	}
	return &http.Client{
		Timeout: 2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{
			Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12,
		}},
	}, nil
}
