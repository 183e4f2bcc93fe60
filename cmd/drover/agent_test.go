package main

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/drover-io/drover/internal/agent"
	"github.com/drover-io/drover/internal/agent/drill"
)

func TestAgentFlagsChooseHowTheFenceGetsItsCertificate(t *testing.T) {
	release := agentFlags{
		clusterName: "east", namespace: "drover-system", webhookConfiguration: "drover-fence",
		webhookService: "drover-fence", webhookCertSecret: "drover-fence-cert", webhookCertDir: "/certs",
	}
	t.Run("the release manifests' flags make the agent rotate its certificate for the Service", func(t *testing.T) {
		opts, err := release.options()
		if err != nil {
			t.Fatal(err)
		}
		r := opts.WebhookCertRotation
		if r == nil || r.DNSName != "drover-fence.drover-system.svc" ||
			r.Secret != (types.NamespacedName{Namespace: "drover-system", Name: "drover-fence-cert"}) {
			t.Fatalf("rotation %+v", r)
		}
		if opts.WebhookConfiguration != "drover-fence" || opts.LeaderElectionNamespace != "drover-system" {
			t.Fatalf("options %+v", opts)
		}
	})
	t.Run("the lab's flags keep the self-signed certificate and the agent's own configuration", func(t *testing.T) {
		opts, err := (&agentFlags{clusterName: "east", webhookAddress: "127.0.0.1:0"}).options()
		if err != nil {
			t.Fatal(err)
		}
		if opts.WebhookCertRotation != nil || opts.WebhookConfiguration != "" || opts.WebhookCertDir != "" {
			t.Fatalf("options %+v", opts)
		}
	})
	for name, f := range map[string]func(*agentFlags){
		"no cluster name":          func(f *agentFlags) { f.clusterName = "" },
		"no namespace":             func(f *agentFlags) { f.namespace = "" },
		"no Service":               func(f *agentFlags) { f.webhookService = "" },
		"no configuration":         func(f *agentFlags) { f.webhookConfiguration = "" },
		"no certificate directory": func(f *agentFlags) { f.webhookCertDir = "" },
	} {
		t.Run("the rotation refuses "+name, func(t *testing.T) {
			bad := release
			f(&bad)
			if _, err := bad.options(); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestAgentFlagsSetTheWorkersAndTheClientRates(t *testing.T) {
	cmd := newAgentCommand()
	if err := cmd.ParseFlags([]string{"--cluster-name=east", "--vrg-workers=16", "--kube-api-qps=50", "--kube-api-burst=80"}); err != nil {
		t.Fatal(err)
	}
	workers, _ := cmd.Flags().GetInt("vrg-workers")
	qps, _ := cmd.Flags().GetFloat32("kube-api-qps")
	burst, _ := cmd.Flags().GetInt("kube-api-burst")
	opts, err := (&agentFlags{clusterName: "east", workers: workers, kubeAPIQPS: qps, kubeAPIBurst: burst}).options()
	if err != nil {
		t.Fatal(err)
	}
	if opts.Workers != 16 || opts.KubeAPIQPS != 50 || opts.KubeAPIBurst != 80 {
		t.Fatalf("options %+v", opts)
	}
	defaults := newAgentCommand()
	if w, _ := defaults.Flags().GetInt("vrg-workers"); w != agent.DefaultWorkers {
		t.Fatalf("default workers %d", w)
	}
	if _, err := (&agentFlags{clusterName: "east", workers: -1}).options(); err == nil {
		t.Fatal("negative workers accepted")
	}
}

func TestAgentFlagsBoundTheDrillSandboxes(t *testing.T) {
	parse := func(args ...string) (agent.Options, error) {
		cmd := newAgentCommand()
		if err := cmd.ParseFlags(append([]string{"--cluster-name=east"}, args...)); err != nil {
			t.Fatal(err)
		}
		f := &agentFlags{clusterName: "east"}
		f.drillQuota, _ = cmd.Flags().GetStringToString("drill-sandbox-quota")
		f.drillDNSNamespace, _ = cmd.Flags().GetString("drill-dns-namespace")
		f.drillDNSPods, _ = cmd.Flags().GetStringToString("drill-dns-pod-labels")
		return f.options()
	}
	opts, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	if len(opts.DrillQuota) != len(drill.DefaultQuota) || opts.DrillQuota.Pods().Cmp(*drill.DefaultQuota.Pods()) != 0 ||
		opts.DrillDNS.Namespace != "kube-system" || opts.DrillDNS.PodLabels["k8s-app"] != "kube-dns" {
		t.Fatalf("the defaults: %+v", opts)
	}
	opts, err = parse("--drill-sandbox-quota=pods=10,requests.cpu=2", "--drill-dns-namespace=openshift-dns",
		"--drill-dns-pod-labels=dns.operator.openshift.io/daemonset-dns=default")
	if err != nil {
		t.Fatal(err)
	}
	if len(opts.DrillQuota) != 2 || opts.DrillQuota.Pods().Value() != 10 || opts.DrillDNS.Namespace != "openshift-dns" {
		t.Fatalf("set: %+v", opts)
	}
	if _, err := parse("--drill-sandbox-quota=pods=ten"); err == nil {
		t.Fatal("a quota that is not a quantity accepted")
	}
	if _, err := parse("--drill-dns-namespace="); err == nil {
		t.Fatal("DNS pods without their namespace accepted")
	}
}
