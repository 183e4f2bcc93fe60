package labtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// longTierCall is one LongTier call: the test that makes it and the representative it names.
type longTierCall struct {
	dir, test, representative string
	pos                       token.Position
}

// TestEveryLongTierTestNamesARepresentativeThatMakeTestRuns reads the repository's tests: each
// call of LongTier is the first statement of a top-level Test function (hack/test-long.sh finds
// the tests by that) and names, as a literal, a Test function of the same package that does not call LongTier.
func TestEveryLongTierTestNamesARepresentativeThatMakeTestRuns(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	calls, tests, long := scanTests(t, root)
	for _, c := range calls {
		key := c.dir + "." + c.representative
		if dir, name, ok := strings.Cut(c.representative, "."); ok && strings.Contains(dir, "/") {
			key = filepath.Join(root, dir) + "." + name
		}
		switch {
		case c.test == "":
			t.Errorf("%s: LongTier is called other than as the first statement of a top-level Test function", c.pos)
		case c.representative == "":
			t.Errorf("%s: %s names its representative with no string literal", c.pos, c.test)
		case !tests[key]:
			t.Errorf("%s: %s names %s, which is no test of its package (or, as dir.TestName, of that directory)", c.pos, c.test, c.representative)
		case long[key]:
			t.Errorf("%s: %s names %s, which is in the long tier too", c.pos, c.test, c.representative)
		}
	}
	t.Logf("%d tests in the long tier", len(calls))
}

// scanTests parses every _test.go file under root and returns the LongTier calls, the Test
// functions (keyed dir.Name) and those of them that call LongTier.
func scanTests(t *testing.T, root string) (calls []longTierCall, tests, long map[string]bool) {
	tests, long = map[string]bool{}, map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || d.Name() == "node_modules") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") {
				continue
			}
			tests[dir+"."+fn.Name.Name] = true
		}
		for _, c := range longTierCalls(fset, f) {
			c.dir = dir
			calls = append(calls, c)
			if c.test != "" {
				long[dir+"."+c.test] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return calls, tests, long
}

// longTierCalls finds the calls of LongTier in f, each with the top-level Test function whose
// first statement it is (empty when it is elsewhere) and its literal representative.
func longTierCalls(fset *token.FileSet, f *ast.File) []longTierCall {
	var calls []longTierCall
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || !isLongTier(call.Fun) {
			return true
		}
		c := longTierCall{pos: fset.Position(call.Pos())}
		if len(call.Args) > 1 {
			if lit, ok := call.Args[1].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				c.representative, _ = strconv.Unquote(lit.Value)
			}
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && strings.HasPrefix(fn.Name.Name, "Test") && fn.Body != nil &&
				len(fn.Body.List) > 0 && fn.Body.List[0].Pos() <= call.Pos() && call.End() <= fn.Body.List[0].End() {
				c.test = fn.Name.Name
			}
		}
		calls = append(calls, c)
		return true
	})
	return calls
}

func isLongTier(fun ast.Expr) bool {
	if sel, ok := fun.(*ast.SelectorExpr); ok {
		x, ok := sel.X.(*ast.Ident)
		return ok && x.Name == "labtest" && sel.Sel.Name == "LongTier"
	}
	id, ok := fun.(*ast.Ident)
	return ok && id.Name == "LongTier"
}
