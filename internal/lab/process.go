package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/drover-io/drover/internal/lab/process"
)

// component is one process of a lab cluster.
type component struct {
	// name identifies the component in status output and log file names.
	name string
	// binary is the absolute path of the executable.
	binary string
	args   []string
	// env is added to the lab's own environment; it carries what must not show on a command line.
	env []string
}

// Every component's command line names its cluster directory (data dir, kubeconfig or certs), so
// the lab finds its processes by scanning /proc for that path. This survives a crashed `drover`
// CLI and lost pid files: `lab down` after a crash still finds everything it started.
func findProcesses(pathFragment string) ([]process.Proc, error) {
	return process.Find(func(p process.Proc) bool {
		// Only the lab's own binaries: a shell or an editor with a lab file open is left alone.
		return namesOwnPath(p.Args, pathFragment) && !isLabCLI(p.Args) && slices.Contains(componentNames, componentOf(p.Args))
	})
}

// peerArgPrefix starts the flags that name another cluster's directory, such as the storage
// controller's --peer-data-dir.
const peerArgPrefix = "--peer-"

// namesOwnPath reports whether an argument other than a peer flag contains pathFragment. A process
// belongs to the cluster whose directory it works in, not to the peer it mirrors to: without this,
// stopping east would also find, and kill, west's storage controller.
func namesOwnPath(args []string, pathFragment string) bool {
	for _, a := range args {
		if !strings.HasPrefix(a, peerArgPrefix) && strings.Contains(a, pathFragment) {
			return true
		}
	}
	return false
}

// isLabCLI reports whether args are a `drover lab <verb>` CLI invocation (which may mention the
// lab directory in a flag) rather than a component the lab started.
func isLabCLI(args []string) bool {
	return len(args) > 2 && args[1] == "lab" && args[2] != storageControllerVerb && args[2] != kubeletVerb && args[2] != proxyVerb
}

// componentByBinary names the components whose binary is not named after them.
var componentByBinary = map[string]string{"versitygw": componentS3}

// componentOf tells which component a process is: the base name of its binary (mapped by
// componentByBinary where they differ), or for drover itself its verb (the lab storage
// controller, the lab kubelet).
func componentOf(args []string) string {
	if len(args) > 2 && args[1] == "lab" && args[2] == storageControllerVerb {
		return componentStorage
	}
	if len(args) > 2 && args[1] == "lab" && args[2] == kubeletVerb {
		return componentKubelet
	}
	if len(args) > 2 && args[1] == "lab" && args[2] == proxyVerb {
		return componentProxy
	}
	base := filepath.Base(args[0])
	if name, ok := componentByBinary[base]; ok {
		return name
	}
	return base
}

// start launches c detached from the caller (process.Command.Start), so it outlives a `drover
// lab up` that exits. Output goes to logDir/<name>.log. When tieToParent is set (tests), the
// process is killed if the starting process dies.
func (c component) start(logDir string, tieToParent bool) (int, error) {
	if _, err := os.Stat(c.binary); err != nil {
		return 0, fmt.Errorf("binary %s for %s is missing: run `make tools` (or hack/build-tools.sh) to build it", c.binary, c.name)
	}
	return process.Command{Name: c.name, Binary: c.binary, Args: c.args, Env: c.env}.Start(logDir, tieToParent)
}

// checkPortFree fails with an error that names the port and its user when port is taken.
func checkPortFree(port int, user string) error {
	if process.PortFree(port) != nil {
		return fmt.Errorf("port %d (for %s) is in use by another process: stop that process, or run `drover lab down` and `drover lab up` to pick new ports", port, user)
	}
	return nil
}
