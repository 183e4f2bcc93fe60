package drpc

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The state diagram of docs/architecture.md is checked against the code: its states are the
// DRPCPhase constants, and its transitions are those the package's functions make. The code's
// transitions are read from the source: next's switch on the phase says which state function
// serves which phases; a phase assigned to status.phase, or passed to begin or complete, in a
// function is a transition from the phases it serves; begin in next's settled part starts from
// every settled phase; a function that next does not serve (deletion) moves from any phase.
func TestTheStateDiagramMatchesTheMachine(t *testing.T) {
	phases := phaseConstants(t)
	code, start := codeTransitions(t, phases)
	doc, docStart, docStates := diagramTransitions(t)

	for _, p := range phases {
		if !docStates[p] {
			t.Errorf("phase %s is not a state of the diagram in docs/architecture.md", p)
		}
	}
	for s := range docStates {
		if s != "[*]" && !slices.Contains(phases, s) {
			t.Errorf("the diagram's state %s is no DRPCPhase", s)
		}
	}
	if docStart != start {
		t.Errorf("the diagram starts in %q; the machine starts in %q", docStart, start)
	}
	for e := range code {
		if !doc[e] {
			t.Errorf("the machine moves %s but the diagram does not show it", e)
		}
	}
	for e := range doc {
		if !code[e] {
			t.Errorf("the diagram shows %s but the machine never makes it", e)
		}
	}
}

// phaseConstants returns the names of api/v1alpha1's DRPCPhase constants, without "Phase".
func phaseConstants(t *testing.T) []string {
	src, err := os.ReadFile(filepath.Join("..", "..", "..", "api", "v1alpha1", "drplacementcontrol_types.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^\s*Phase(\w+)\s+DRPCPhase\s*=`).FindAllStringSubmatch(string(src), -1) {
		out = append(out, m[1])
	}
	if len(out) < 5 {
		t.Fatalf("found only %v as DRPCPhase constants", out)
	}
	return out
}

// phaseOf returns the phase a v1alpha1.PhaseX expression names, or "".
func phaseOf(e ast.Expr) string {
	if sel, ok := e.(*ast.SelectorExpr); ok {
		if x, ok := sel.X.(*ast.Ident); ok && x.Name == "v1alpha1" && strings.HasPrefix(sel.Sel.Name, "Phase") {
			return strings.TrimPrefix(sel.Sel.Name, "Phase")
		}
	}
	return ""
}

// targets returns the phases node assigns to a .Phase field or passes to begin or complete.
func targets(node ast.Node) []string {
	var out []string
	ast.Inspect(node, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, lhs := range n.Lhs {
				if sel, ok := lhs.(*ast.SelectorExpr); ok && sel.Sel.Name == "Phase" && i < len(n.Rhs) {
					if p := phaseOf(n.Rhs[i]); p != "" {
						out = append(out, p)
					}
				}
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "begin" || sel.Sel.Name == "complete") {
				for _, a := range n.Args {
					if p := phaseOf(a); p != "" {
						out = append(out, p)
					}
				}
			}
		}
		return true
	})
	return out
}

// codeTransitions reads the package's transitions as "From -> To" and the state that an unset
// phase is served as.
func codeTransitions(t *testing.T, phases []string) (transitions, string) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	funcs := map[string]*ast.FuncDecl{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				funcs[fd.Name.Name] = fd
			}
		}
	}
	next := funcs["next"]
	if next == nil {
		t.Fatal("no func next in the package")
	}
	edges := transitions{}
	var phaseSwitch *ast.SwitchStmt
	for _, st := range next.Body.List {
		if sw, ok := st.(*ast.SwitchStmt); ok && sw.Tag != nil {
			phaseSwitch = sw
			break
		}
	}
	if phaseSwitch == nil {
		t.Fatal("next has no switch on the phase")
	}
	served, cased, start := edges.fromSwitch(phaseSwitch)
	// Functions next does not serve (deletion) move from any phase.
	anyTargets := map[string]bool{}
	for name, fd := range funcs {
		if name == "next" || name == "begin" || name == "complete" || served[name] != nil {
			continue
		}
		for _, to := range targets(fd) {
			anyTargets[to] = true
			edges.add(phases, to)
		}
	}
	var settled []string
	for _, p := range phases {
		if !slices.Contains(cased, p) && !anyTargets[p] {
			settled = append(settled, p)
		}
	}
	for _, st := range next.Body.List {
		if st != phaseSwitch {
			for _, to := range targets(st) {
				edges.add(settled, to)
			}
		}
	}
	for name, from := range served {
		if fd := funcs[name]; fd != nil {
			for _, to := range targets(fd) {
				edges.add(from, to)
			}
		}
	}
	return edges, start
}

// transitions are "From -> To" edges.
type transitions map[string]bool

// add records an edge from each phase of from to to, leaving out staying in a phase.
func (e transitions) add(from []string, to string) {
	for _, f := range from {
		if f != to {
			e[f+" -> "+to] = true
		}
	}
}

// fromSwitch reads next's switch on the phase: which state function serves which phases, the
// phases with a case, the phase an unset one is served as, and the transitions the cases make.
func (e transitions) fromSwitch(sw *ast.SwitchStmt) (served map[string][]string, cased []string, start string) {
	served = map[string][]string{}
	for _, c := range sw.Body.List {
		cc := c.(*ast.CaseClause)
		var from []string
		unset := false
		for _, x := range cc.List {
			if p := phaseOf(x); p != "" {
				from = append(from, p)
			} else if lit, ok := x.(*ast.BasicLit); ok && lit.Value == strconv.Quote("") {
				unset = true
			}
		}
		if unset && len(from) == 1 {
			start = from[0]
		}
		cased = append(cased, from...)
		for _, st := range cc.Body {
			if ret, ok := st.(*ast.ReturnStmt); ok && len(ret.Results) == 1 {
				if sel, ok := ret.Results[0].(*ast.SelectorExpr); ok {
					served[sel.Sel.Name] = append(served[sel.Sel.Name], from...)
				}
			}
		}
		for _, to := range targets(cc) {
			e.add(from, to)
		}
	}
	return served, cased, start
}

// diagramTransitions parses the mermaid stateDiagram of docs/architecture.md: its transitions as
// "From -> To" (an edge from a composite state stands for one from each state inside it; edges
// to [*] are left out), the state [*] leads to, and every state named.
func diagramTransitions(t *testing.T) (map[string]bool, string, map[string]bool) {
	src, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```mermaid\\s*\\n\\s*stateDiagram-v2\\n(.*?)```").FindSubmatch(src)
	if m == nil {
		t.Fatal("docs/architecture.md has no mermaid stateDiagram-v2 block")
	}
	edge := regexp.MustCompile(`^(\S+)\s*-->\s*([^:\s]+)`)
	composites, inside := map[string][]string{}, ""
	var raw [][2]string
	states := map[string]bool{}
	for _, line := range strings.Split(string(m[1]), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "state ") && strings.HasSuffix(line, "{"):
			inside = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(line, "state "), "{"))
		case line == "}":
			inside = ""
		case edge.MatchString(line):
			e := edge.FindStringSubmatch(line)
			raw = append(raw, [2]string{e[1], e[2]})
			if inside != "" {
				composites[inside] = append(composites[inside], e[1], e[2])
			}
		}
	}
	edges, start := map[string]bool{}, ""
	for _, e := range raw {
		from, to := []string{e[0]}, e[1]
		if inner, ok := composites[e[0]]; ok {
			from = inner
		}
		for _, s := range append(slices.Clone(from), to) {
			states[s] = true
		}
		switch {
		case e[0] == "[*]":
			start = to
		case to == "[*]":
		default:
			for _, f := range from {
				if f != to {
					edges[f+" -> "+to] = true
				}
			}
		}
	}
	return edges, start, states
}
