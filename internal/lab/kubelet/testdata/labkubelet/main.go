// Command labkubelet runs the lab kubelet as a process of its own, as `drover lab` would: the
// tests kill it to prove that its containers die with it.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/drover-io/drover/internal/kubeconfig"
	"github.com/drover-io/drover/internal/lab/kubelet"
)

func main() {
	// Flags of its own: packages the kubelet imports (controller-runtime's) register a global
	// --kubeconfig.
	flag := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	kubeconfigPath := flag.String("kubeconfig", "", "kubeconfig of the kubelet's identity")
	node := flag.String("node", kubelet.DefaultNodeName, "node name")
	image := flag.String("image", "", "image=binary")
	stateDir := flag.String("state-dir", "", "state directory")
	logDir := flag.String("log-dir", "", "log directory")
	podCIDR := flag.String("pod-cidr", kubelet.DefaultPodCIDR.String(), "loopback range of pod IPs")
	_ = flag.Parse(os.Args[1:])
	if err := run(*kubeconfigPath, *node, *image, *stateDir, *logDir, *podCIDR); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(kubeconfigPath, node, image, stateDir, logDir, podCIDR string) error {
	cfg, err := kubeconfig.FromFile(kubeconfigPath)
	if err != nil {
		return err
	}
	name, bin, _ := strings.Cut(image, "=")
	cidr, err := netip.ParsePrefix(podCIDR)
	if err != nil {
		return err
	}
	k, err := kubelet.New(kubelet.Options{Config: cfg, NodeName: node, Images: map[string]string{name: bin},
		StateDir: stateDir, LogDir: logDir, PodCIDR: cidr})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return k.Run(ctx)
}
