package archtest

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/voicebox-go/voicebox"

// repoRoot is the checkout's top directory, two folders up from this package.
var repoRoot = filepath.Join("..", "..")

// imports lists every package of the module (GOOS=js too, for the page's) with its non-test
// imports of the module's own packages, by path relative to the module.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, goos := range []string{"", "js"} {
		args := []string{"list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./..."}
		if goos == "js" {
			// -e: the relay's commands import internal/machine, which does not build for js.
			args = append(args[:1], append([]string{"-e"}, args[1:]...)...)
		}
		cmd := exec.Command("go", args...)
		cmd.Dir = repoRoot
		cmd.Env = os.Environ()
		if goos == "js" {
			cmd.Env = append(cmd.Env, "GOOS=js", "GOARCH=wasm")
		}
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list (GOOS=%s): %v", goos, err)
		}
		for line := range strings.Lines(string(b)) {
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			pkg := strings.TrimPrefix(strings.TrimPrefix(f[0], module), "/")
			for _, imp := range f[1:] {
				if rest, ok := strings.CutPrefix(imp, module+"/"); ok && !slices.Contains(out[pkg], rest) {
					out[pkg] = append(out[pkg], rest)
				}
			}
			if _, ok := out[pkg]; !ok {
				out[pkg] = nil
			}
		}
	}
	return out
}

// door returns the door a package belongs to ("mcp" for internal/door/mcp/...), "" for none.
func door(pkg string) string {
	rest, ok := strings.CutPrefix(pkg, "internal/door/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}

func core(pkg string) bool { return pkg == "internal/core" || strings.HasPrefix(pkg, "internal/core/") }

// TestTheCoreImportsNoDoorAndNoDoorAnother is the rule of the house: the core builds and runs
// alone, and a door is given the core and nothing else. The shared rules and the page import
// neither.
func TestTheCoreImportsNoDoorAndNoDoorAnother(t *testing.T) {
	for pkg, imps := range imports(t) {
		for _, imp := range imps {
			switch {
			case core(pkg) && door(imp) != "":
				t.Errorf("%s (core) imports %s (door %s): the core imports no door; give the core an interface the door supplies", pkg, imp, door(imp))
			case core(pkg) && (imp == "internal/relay" || strings.HasPrefix(imp, "cmd/")):
				t.Errorf("%s (core) imports %s, which assembles the relay", pkg, imp)
			case door(pkg) != "" && door(imp) != "" && door(pkg) != door(imp):
				t.Errorf("%s (door %s) imports %s (door %s): a door imports the core, never another door", pkg, door(pkg), imp, door(imp))
			case (strings.HasPrefix(pkg, "shared/") || strings.HasPrefix(pkg, "internal/shared/")) && (core(imp) || door(imp) != ""):
				t.Errorf("%s (a shared rule) imports %s: the rules both programs compile import neither the core nor a door", pkg, imp)
			}
		}
	}
}

// component is the box a package is drawn in on docs/architecture.md's picture.
func component(pkg string) string {
	switch {
	case core(pkg):
		return "core"
	case door(pkg) != "":
		return door(pkg)
	case pkg == "internal/relay":
		return "relay"
	case strings.HasPrefix(pkg, "cmd/relay"):
		return "cmd_relay"
	case pkg == "browser" || pkg == "internal/engine" || pkg == "internal/opfs" || pkg == "internal/jsutil":
		return "page"
	case strings.HasPrefix(pkg, "shared/") || strings.HasPrefix(pkg, "internal/shared/") || strings.HasPrefix(pkg, "internal/pagerules"):
		return "shared"
	case pkg == "internal/machine":
		return "machine"
	}
	return "" // public, catalogue, samples, this package: files and data, not drawn
}

// pictureEdges reads the mermaid picture of docs/architecture.md: its "A --> B" lines.
func pictureEdges(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	edges := map[string]bool{}
	in := false
	edge := regexp.MustCompile(`^\s*(\w+)(?:\[[^\]]*\])?\s*-->\s*(\w+)`)
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```mermaid"):
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case in:
			if m := edge.FindStringSubmatch(line); m != nil {
				edges[m[1]+" --> "+m[2]] = true
			}
		}
	}
	return edges
}

// TestThePictureIsTheImportGraph: every arrow of docs/architecture.md's picture is an import
// between two of its boxes, and every such import is an arrow.
func TestThePictureIsTheImportGraph(t *testing.T) {
	want := map[string]bool{}
	for pkg, imps := range imports(t) {
		for _, imp := range imps {
			from, to := component(pkg), component(imp)
			if from != "" && to != "" && from != to {
				want[from+" --> "+to] = true
			}
		}
	}
	drawn := pictureEdges(t)
	for e := range want {
		if !drawn[e] {
			t.Errorf("docs/architecture.md's picture lacks %s, an import of the code", e)
		}
	}
	for e := range drawn {
		if !want[e] {
			t.Errorf("docs/architecture.md's picture draws %s, which the code does not import", e)
		}
	}
}

// lines counts the Go lines under dir that a relay runs: not tests, nor the packages that
// serve only tests (a name ending in "test", the vendor fixture).
func lines(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(filepath.Join(repoRoot, dir), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && (strings.HasSuffix(d.Name(), "test") || d.Name() == "vendorfixture" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n += bytes.Count(b, []byte("\n"))
		return nil
	})
	return n
}

// lineDrift is how far a count in docs/architecture.md may be from the code's before the test
// asks for it to be written again.
const lineDrift = 0.15

// TestTheLineCountsAreCurrent: docs/architecture.md's table gives the core's non-test Go lines
// and each door's within lineDrift of what they are.
func TestTheLineCountsAreCurrent(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(internal/[a-z/]+)/` +\\| ([0-9,]+) +\\|")
	rows := row.FindAllStringSubmatch(string(b), -1)
	dirs := []string{"internal/core"}
	entries, _ := os.ReadDir(filepath.Join(repoRoot, "internal", "door"))
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, "internal/door/"+e.Name())
		}
	}
	for _, dir := range dirs {
		i := slices.IndexFunc(rows, func(r []string) bool { return r[1] == dir })
		have := lines(t, dir)
		if i < 0 {
			t.Errorf("docs/architecture.md has no line count for %s/ (%d lines)", dir, have)
			continue
		}
		said, _ := strconv.Atoi(strings.ReplaceAll(rows[i][2], ",", ""))
		if d := float64(said-have) / float64(have); d > lineDrift || d < -lineDrift {
			t.Errorf("docs/architecture.md says %s/ is %d lines; it is %d: write the table again", dir, said, have)
		}
	}
}

// maxPublicNames bounds the exported names outside internal/: the contracts others may import
// (the refusal package's shape, the tool shape, the page's files and the catalogue), nothing
// else. The refusal ids themselves (constants of type refusal.Rule) are counted apart: they are
// the specification's table of ids, one per refusal, documented one by one in docs/reference.md
// (TestReferenceIsCurrent), and a new refusal must not need a new exception here.
const maxPublicNames = 200

// publicNames lists the exported names of the module's importable packages outside internal/
// (main packages, tests and tools are not importable): "path.Name", or "path.Type.Method"; and,
// apart, the refusal ids (shared/refusal's constants of type Rule).
func publicNames(t *testing.T) (names, rules []string) {
	t.Helper()
	filepath.WalkDir(repoRoot, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" ||
				slices.Contains([]string{"internal", "tests", "tools", "cmd", "bin", "dist"}, rel) || strings.Contains(rel, "/internal")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		if err != nil || f.Name.Name == "main" {
			return nil
		}
		pkg := filepath.ToSlash(filepath.Dir(rel))
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				if !decl.Name.IsExported() {
					continue
				}
				name := decl.Name.Name
				if decl.Recv != nil {
					typ := decl.Recv.List[0].Type
					if s, ok := typ.(*ast.StarExpr); ok {
						typ = s.X
					}
					if ix, ok := typ.(*ast.IndexExpr); ok {
						typ = ix.X
					}
					id, ok := typ.(*ast.Ident)
					if !ok || !id.IsExported() {
						continue
					}
					name = id.Name + "." + name
				}
				names = append(names, pkg+"."+name)
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					switch spec := spec.(type) {
					case *ast.TypeSpec:
						if spec.Name.IsExported() {
							names = append(names, pkg+"."+spec.Name.Name)
						}
					case *ast.ValueSpec:
						typ, _ := spec.Type.(*ast.Ident)
						isRule := pkg == "shared/refusal" && typ != nil && typ.Name == "Rule"
						for _, n := range spec.Names {
							switch {
							case !n.IsExported():
							case isRule:
								rules = append(rules, pkg+"."+n.Name)
							default:
								names = append(names, pkg+"."+n.Name)
							}
						}
					}
				}
			}
		}
		return nil
	})
	slices.Sort(names)
	return names, rules
}

// TestThePublicSurfaceDoesNotGrow: the exported names outside internal/ are those listed in
// testdata/public.txt, fewer than maxPublicNames. A new one fails until it is added to the list
// (a contract others may import) or moved under internal/.
func TestThePublicSurfaceDoesNotGrow(t *testing.T) {
	have, rules := publicNames(t)
	if len(rules) < 100 {
		t.Errorf("only %d refusal ids found in shared/refusal: the scan no longer sees them", len(rules))
	}
	if len(have) >= maxPublicNames {
		t.Errorf("%d exported names outside internal/, the bound is under %d", len(have), maxPublicNames)
	}
	b, err := os.ReadFile(filepath.Join("testdata", "public.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for line := range strings.Lines(string(b)) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			listed = append(listed, line)
		}
	}
	for _, n := range have {
		if !slices.Contains(listed, n) {
			t.Errorf("%s is exported outside internal/ and not in testdata/public.txt: move it under internal/, or list it if others may import it", n)
		}
	}
	for _, n := range listed {
		if !slices.Contains(have, n) {
			t.Errorf("testdata/public.txt lists %s, which is no longer exported: remove it from the list", n)
		}
	}
	if t.Failed() {
		fmt.Fprintf(os.Stderr, "the public names now (%d):\n%s\n", len(have), strings.Join(have, "\n"))
	}
}

// notACoreDoor names the folders of internal/door/ that are not a core.Door, each with why. The
// fleet's life encloses the core's (docs/architecture.md, "The fleet: beneath the core"): it backs
// the core's stores before core.New and leaves after the core's shutdown, so the assembly runs it
// in named steps around the core. Another entry needs as good a reason, written there too.
var notACoreDoor = map[string]string{
	"fleet": "it backs the core's stores before the core is built and leaves after the core's shutdown (internal/relay's joinFleet, attachFleet, closeFleet)",
}

// doorMethods are core.Door's methods, as their signatures read in a door's source (the core
// imported under its own name).
var doorMethods = []string{"Name() string", "StateFiles() []string", "Mount(*core.Core) error", "Close()"}

// coreDoors returns the types of the package in dir (its non-test files) that have every method
// of doorMethods.
func coreDoors(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	methods := map[string][]string{} // by receiver type
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		coreName := "" // the name the file imports internal/core by
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); path == module+"/internal/core" {
				coreName = "core"
				if imp.Name != nil {
					coreName = imp.Name.Name
				}
			}
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil {
				continue
			}
			recv := fn.Recv.List[0].Type
			if s, ok := recv.(*ast.StarExpr); ok {
				recv = s.X
			}
			id, ok := recv.(*ast.Ident)
			if !ok {
				continue
			}
			sig := fn.Name.Name + "(" + fieldTypes(fn.Type.Params) + ")"
			if res := fieldTypes(fn.Type.Results); res != "" {
				sig += " " + res
			}
			if coreName != "" && coreName != "core" {
				sig = strings.ReplaceAll(sig, "*"+coreName+".Core", "*core.Core")
			} else if coreName == "" {
				sig = strings.ReplaceAll(sig, "*core.Core", "*?.Core") // a Core of another package
			}
			methods[id.Name] = append(methods[id.Name], sig)
		}
	}
	var doors []string
	for typ, sigs := range methods {
		if !slices.ContainsFunc(doorMethods, func(m string) bool { return !slices.Contains(sigs, m) }) {
			doors = append(doors, typ)
		}
	}
	slices.Sort(doors)
	return doors
}

// fieldTypes writes the types of a parameter or result list as a signature reads them.
func fieldTypes(l *ast.FieldList) string {
	if l == nil {
		return ""
	}
	var out []string
	for _, f := range l.List {
		n := max(len(f.Names), 1)
		for range n {
			out = append(out, types.ExprString(f.Type))
		}
	}
	return strings.Join(out, ", ")
}

// TestEveryDoorIsACoreDoor: each folder of internal/door/ has a type that is a core.Door (Name,
// StateFiles, Mount, Close), which the assembly mounts on the core, except those notACoreDoor
// names with their reason; an exception whose folder is gone, or has become a core.Door, fails too.
func TestEveryDoorIsACoreDoor(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join(repoRoot, "internal", "door"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		seen[e.Name()] = true
		doors := coreDoors(t, filepath.Join(repoRoot, "internal", "door", e.Name()))
		why, excepted := notACoreDoor[e.Name()]
		switch {
		case excepted && len(doors) > 0:
			t.Errorf("internal/door/%s has a core.Door (%s) but is named an exception (%s): mount it and drop the exception", e.Name(), strings.Join(doors, ", "), why)
		case !excepted && len(doors) == 0:
			t.Errorf("internal/door/%s has no type with core.Door's methods (%s): every door is mounted on the core as one", e.Name(), strings.Join(doorMethods, ", "))
		}
	}
	for name := range notACoreDoor {
		if !seen[name] {
			t.Errorf("notACoreDoor names internal/door/%s, which is gone: drop the exception", name)
		}
	}
}
