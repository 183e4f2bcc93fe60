package repocheck

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/drover-io/drover/internal/modroot"
)

const module = "github.com/drover-io/drover/"

// rule says that no package whose path starts with from, but those under except, may depend,
// directly or through others, on a package whose path starts with one of the prefixes in not.
type rule struct {
	from   string
	except []string
	not    []string
	why    string
}

// metricsTest reads collectors in tests.
const metricsTest = "internal/metrics/metricstest"

// vrgLab is the harness of the agent's VolumeReplicationGroup lab tests: test code under
// internal/agent, which only tests import. Whatever imports it depends on the lab through it.
const vrgLab = "internal/agent/vrg/vrglab"

var rules = []rule{
	{from: "internal/lab", not: []string{"internal/story", "internal/exercise", "internal/hub", "internal/agent", "internal/cli", "cmd/"},
		why: "the lab stands under what runs on it"},
	{from: "internal/story", not: []string{"internal/exercise"},
		why: "the exercises drive the story, not the other way round"},
	{from: "internal/hub", not: []string{"internal/lab", "internal/story", "internal/exercise", metricsTest},
		why: "production code never imports test code"},
	{from: "internal/hub", not: []string{"internal/replication"},
		why: "the hub never touches a replication backend: a rule both read (a name) lives in api/"},
	{from: "internal/agent", except: []string{vrgLab}, not: []string{"internal/lab", "internal/story", "internal/exercise", metricsTest},
		why: "production code never imports test code"},
	{from: "internal/cli", not: []string{"internal/lab", "internal/story", "internal/exercise", metricsTest},
		why: "production code never imports test code"},
	{from: "internal/replication", not: []string{"internal/lab", "internal/story", "internal/exercise", metricsTest},
		why: "production code never imports test code"},
}

// deps lists every package of the module with its module-internal dependencies (transitive,
// tests excluded: a test may reach down or across).
func deps(t *testing.T) map[string][]string {
	t.Helper()
	root, err := modroot.Find()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	all := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || !strings.HasPrefix(fields[0], module) {
			continue
		}
		pkg := strings.TrimPrefix(fields[0], module)
		for _, d := range fields[1:] {
			if strings.HasPrefix(d, module) {
				all[pkg] = append(all[pkg], strings.TrimPrefix(d, module))
			}
		}
		if _, ok := all[pkg]; !ok {
			all[pkg] = nil
		}
	}
	return all
}

// violations returns "pkg -> dep (why)" for each dependency a rule forbids.
func violations(all map[string][]string) []string {
	var bad []string
	for pkg, ds := range all {
		for _, r := range rules {
			if !within(pkg, r.from) || slices.ContainsFunc(r.except, func(e string) bool { return within(pkg, e) }) {
				continue
			}
			for _, d := range ds {
				for _, n := range r.not {
					if within(d, strings.TrimSuffix(n, "/")) {
						bad = append(bad, pkg+" -> "+d+" ("+r.why+")")
					}
				}
			}
		}
	}
	return bad
}

// within says whether pkg is prefix or a package under it.
func within(pkg, prefix string) bool {
	return pkg == prefix || strings.HasPrefix(pkg, prefix+"/")
}

func TestPackagesKeepTheirLayers(t *testing.T) {
	all := deps(t)
	if _, ok := all["internal/lab"]; !ok {
		t.Fatalf("go list found no internal/lab among %d packages: the test reads the wrong tree", len(all))
	}
	for _, v := range violations(all) {
		t.Errorf("forbidden dependency: %s", v)
	}
}

func TestTheRuleCatchesAnUpwardImport(t *testing.T) {
	all := map[string][]string{
		"internal/lab/bench": {"internal/story", "internal/lab"},
		"internal/story":     {"internal/lab"},
	}
	got := violations(all)
	if len(got) != 1 || !strings.HasPrefix(got[0], "internal/lab/bench -> internal/story") {
		t.Fatalf("violations = %q, want the lab's import of the story only", got)
	}
}

func TestOnlyTheTestHarnessUnderTheAgentMayImportTheLab(t *testing.T) {
	all := map[string][]string{
		vrgLab:               {"internal/lab/labtest", "internal/lab", "internal/agent"},
		"internal/agent/vrg": {vrgLab, "internal/lab/labtest", "internal/lab"},
	}
	got := violations(all)
	slices.Sort(got)
	want := []string{"internal/agent/vrg -> internal/lab", "internal/agent/vrg -> internal/lab/labtest"}
	if len(got) != len(want) || !strings.HasPrefix(got[0], want[0]+" (") || !strings.HasPrefix(got[1], want[1]+" (") {
		t.Fatalf("violations = %q, want %q: the harness itself may import the lab, what imports it may not", got, want)
	}
}
