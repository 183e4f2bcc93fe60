package repocheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/drover-io/drover/internal/modroot"
)

// clientcmdPath is client-go's kubeconfig package.
const clientcmdPath = "k8s.io/client-go/tools/clientcmd"

// kubeconfigBuilders are clientcmd's functions that turn a kubeconfig into a client's
// configuration (and so run its plugins, read its files, trust its server). Parsing one
// (Load, LoadFromFile) and writing one are not in the list.
var kubeconfigBuilders = []string{
	"BuildConfigFromFlags", "BuildConfigFromKubeconfigGetter", "RESTConfigFromKubeConfig",
	"NewClientConfigFromBytes", "NewDefaultClientConfig", "NewNonInteractiveClientConfig", "NewInteractiveClientConfig",
	"NewNonInteractiveDeferredLoadingClientConfig", "NewInteractiveDeferredLoadingClientConfig", "DefaultClientConfig",
}

// kubeconfigDoor is the one package allowed to call them (internal/kubeconfig: FromSecret
// checks a Secret's kubeconfig, Person and FromFile load a person's or a process's own).
const kubeconfigDoor = "internal/kubeconfig"

// kubeconfigBuilderCalls returns "file:line: clientcmd.F" for each use of a builder in the Go
// source at path (its package's path relative to the module: rel).
func kubeconfigBuilderCalls(fset *token.FileSet, path, rel string, src any) ([]string, error) {
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("failed to parse %s: %w", rel, err)
	}
	local := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == clientcmdPath {
			local = "clientcmd"
			if imp.Name != nil {
				local = imp.Name.Name
			}
		}
	}
	if local == "" {
		return nil, nil
	}
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok && x.Name == local && slices.Contains(kubeconfigBuilders, sel.Sel.Name) {
			found = append(found, fmt.Sprintf("%s:%d: clientcmd.%s", rel, fset.Position(sel.Pos()).Line, sel.Sel.Name))
		}
		return true
	})
	return found, nil
}

// Every kubeconfig reaches a client through internal/kubeconfig: a DRCluster's Secret through
// FromSecret, which refuses plugins, files, insecure TLS, a proxy and impersonation; a person's
// or a process's own file through Person and FromFile. A clientcmd builder called anywhere else
// (production code, the lab, the commands; tests may build what they test) is named here.
func TestEveryKubeconfigReachesAClientThroughTheOneCheckedConstructor(t *testing.T) {
	root, err := modroot.Find()
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var bad []string
	seen := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || rel == kubeconfigDoor || fileExists(filepath.Join(path, "go.mod"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		seen++
		calls, err := kubeconfigBuilderCalls(fset, path, rel, nil)
		bad = append(bad, calls...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 100 {
		t.Fatalf("read only %d Go files under %s: the test reads the wrong tree", seen, root)
	}
	for _, b := range bad {
		t.Errorf("%s builds a client from a kubeconfig outside %s: use kubeconfig.FromSecret for a Secret's kubeconfig (checked), "+
			"kubeconfig.Person or kubeconfig.FromFile for a person's or a process's own", b, kubeconfigDoor)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func TestTheKubeconfigRuleCatchesARenamedImport(t *testing.T) {
	src := `package x
import cc "k8s.io/client-go/tools/clientcmd"
func f(b []byte) { _, _ = cc.RESTConfigFromKubeConfig(b); _, _ = cc.Load(b) }
`
	got, err := kubeconfigBuilderCalls(token.NewFileSet(), "x.go", "internal/x/x.go", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "internal/x/x.go:3: clientcmd.RESTConfigFromKubeConfig" {
		t.Fatalf("calls = %q, want the builder only (Load parses, it builds nothing)", got)
	}
}
