// Command kube-controlplane is the lab's kube-apiserver, kube-controller-manager and kube-scheduler
// in one binary, each the unchanged command of k8s.io/kubernetes: it runs the command it is named
// as (bin/ holds the three names as symbolic links to it, so the processes, their arguments and
// their user agents are what the three binaries give) or, run as kube-controlplane, the one its
// first argument names. One go build compiles the three commands' packages together and links
// once where three builds linked three times (hack/build-tools.sh).
package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	_ "time/tzdata" // CronJob time zones, as kube-apiserver and kube-controller-manager import it

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // the JSON log format, as all three import it
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go's metrics, likewise
	_ "k8s.io/component-base/metrics/prometheus/version"  // the version metric, likewise
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

var commands = map[string]func() *cobra.Command{
	"kube-apiserver":          apiserver.NewAPIServerCommand,
	"kube-controller-manager": controllermanager.NewControllerManagerCommand,
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
}

func main() {
	name, args := filepath.Base(os.Args[0]), os.Args[1:]
	if _, ok := commands[name]; !ok && len(args) > 0 {
		name, args = args[0], args[1:]
	}
	newCommand, ok := commands[name]
	if !ok {
		names := slices.Sorted(maps.Keys(commands))
		fmt.Fprintf(os.Stderr, "kube-controlplane: run it as %s (a symbolic link named so), "+
			"or with one of those names as its first argument\n", strings.Join(names, ", "))
		os.Exit(2)
	}
	command := newCommand()
	command.SetArgs(args)
	os.Exit(cli.Run(command))
}
