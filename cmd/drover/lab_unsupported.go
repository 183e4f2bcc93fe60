//go:build !linux

package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

// The lab starts Linux processes (kube-apiserver, etcd, the lab's kubelet and storage) and
// manages them as Linux process groups, so `drover lab` and `drover demo` exist on Linux only;
// elsewhere the CLI keeps its client verbs and says so when asked for the lab.

func newLabCommand() *cobra.Command { return linuxOnly("lab", "Run drover's lab (Linux only)") }

func newDemoCommand() *cobra.Command {
	return linuxOnly("demo", "Run the whole DR story in the lab (Linux only)")
}

func linuxOnly(use, short string) *cobra.Command {
	return &cobra.Command{
		Use:                use,
		Short:              short,
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			return fmt.Errorf("drover %s runs on Linux only (this is %s/%s): run it on a Linux machine or VM with Go",
				use, runtime.GOOS, runtime.GOARCH)
		},
	}
}
