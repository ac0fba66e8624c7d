package main

// The reference (docs/reference.md) is rendered here from the code: every flag of every command
// (the flag sets of the commands table), every environment variable (the environment table),
// the bounds a person meets (the constants below, with their doc comments) and every refusal id
// with its doc comment (shared/refusal, read with go/doc). TestReferenceIsCurrent fails while the
// committed file is stale; regenerate it with
//
//	go test ./cmd/relay -run TestReferenceIsCurrent -update
//
// (the path of this package, wherever it lives).

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/core"
	"github.com/voicebox-go/voicebox/internal/core/assistant"
	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/core/hub"
	"github.com/voicebox-go/voicebox/internal/core/outbound"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/core/session"
	"github.com/voicebox-go/voicebox/internal/core/voice"
	"github.com/voicebox-go/voicebox/internal/door/extensionhost"
	"github.com/voicebox-go/voicebox/internal/door/extensionhost/mcphost"
	"github.com/voicebox-go/voicebox/internal/door/mcp"
	"github.com/voicebox-go/voicebox/internal/shared/approval"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/extensions"
	"github.com/voicebox-go/voicebox/internal/shared/externalapp"
	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/internal/shared/miniappstore"
	"github.com/voicebox-go/voicebox/internal/shared/rematch"
	"github.com/voicebox-go/voicebox/internal/shared/toolschema"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

var updateReference = flag.Bool("update", false, "write docs/reference.md from the code instead of comparing it")

// referenceFile is the reference's path from the module's root.
const referenceFile = "docs/reference.md"

// unit says how a bound's value reads: a count, a number of bytes, or a duration.
type unit int

const (
	countUnit unit = iota
	bytesUnit
	duration
)

// referenceBound is one bound the docs quote: the Go constant as package.Name (the package by
// the name this file imports it under), its value and how the value reads.
type referenceBound struct {
	name  string
	value int64
	unit  unit
}

// referenceBounds are the bounds the README and docs/ quote; they link here instead of copying
// a number. A bound added to a document belongs here first.
var referenceBounds = []referenceBound{
	{"approval.Timeout", int64(approval.Timeout), duration},
	{"approval.RunBound", int64(approval.RunBound), duration},
	{"approval.OutcomeGrace", int64(approval.OutcomeGrace), duration},
	{"approval.MaxLiveRuns", approval.MaxLiveRuns, countUnit},
	{"assistant.MaxPendingApprovals", assistant.MaxPendingApprovals, countUnit},
	{"toolschema.MaxArgumentBytes", toolschema.MaxArgumentBytes, bytesUnit},
	{"rematch.MaxInstructions", rematch.MaxInstructions, countUnit},
	{"rematch.MaxSteps", rematch.MaxSteps, countUnit},
	{"executor.MaxHistoryEntries", executor.MaxHistoryEntries, countUnit},
	{"executor.MaxHistoryBytes", executor.MaxHistoryBytes, bytesUnit},
	{"executor.MaxHistoryFileBytes", executor.MaxHistoryFileBytes, bytesUnit},
	{"executor.MaxReadFiles", executor.MaxReadFiles, countUnit},
	{"executor.MaxMediaBytes", executor.MaxMediaBytes, bytesUnit},
	{"executor.DefaultTreeDepth", executor.DefaultTreeDepth, countUnit},
	{"executor.MaxTreeDepth", executor.MaxTreeDepth, countUnit},
	{"executor.MaxTreeEntries", executor.MaxTreeEntries, countUnit},
	{"miniapp.MaxToolsPerApp", miniapp.MaxToolsPerApp, countUnit},
	{"miniapp.MaxWebMCPToolNameLength", miniapp.MaxWebMCPToolNameLength, countUnit},
	{"miniapp.ToolTimeout", int64(miniapp.ToolTimeout), duration},
	{"miniapp.BridgeHandshakeTimeout", int64(miniapp.BridgeHandshakeTimeout), duration},
	{"miniapp.MaxOutputBytes", miniapp.MaxOutputBytes, bytesUnit},
	{"miniapp.MessageBudget", miniapp.MessageBudget, countUnit},
	{"miniapp.MessageByteBudget", miniapp.MessageByteBudget, bytesUnit},
	{"miniapp.MessageBudgetWindow", int64(miniapp.MessageBudgetWindow), duration},
	{"miniappstore.MaxFolderFiles", miniappstore.MaxFolderFiles, countUnit},
	{"miniappstore.MaxFolderFileBytes", miniappstore.MaxFolderFileBytes, bytesUnit},
	{"miniappstore.MaxFolderBytes", miniappstore.MaxFolderBytes, bytesUnit},
	{"externalapp.MaxTools", externalapp.MaxTools, countUnit},
	{"externalapp.MaxToolDescriptionChars", externalapp.MaxToolDescriptionChars, countUnit},
	{"externalapp.MaxTitleChars", externalapp.MaxTitleChars, countUnit},
	{"externalapp.MaxSummaryChars", externalapp.MaxSummaryChars, countUnit},
	{"externalapp.MaxContextPayloadChars", externalapp.MaxContextPayloadChars, countUnit},
	{"externalapp.CallTimeout", int64(externalapp.CallTimeout), duration},
	{"extensions.FetchRequestTimeout", int64(extensions.FetchRequestTimeout), duration},
	{"extensions.FetchCallTimeout", int64(extensions.FetchCallTimeout), duration},
	{"extensions.MCPCallTimeout", int64(extensions.MCPCallTimeout), duration},
	{"extensions.MaxMCPTools", extensions.MaxMCPTools, countUnit},
	{"extensions.MaxMCPDescriptionBytes", extensions.MaxMCPDescriptionBytes, bytesUnit},
	{"extensions.MaxViewDomains", extensions.MaxViewDomains, countUnit},
	{"extensionhost.MaxRedirects", extensionhost.MaxRedirects, countUnit},
	{"mcphost.MaxMCPResultText", mcphost.MaxMCPResultText, bytesUnit},
	{"mcphost.MaxRemoteSchemaBytes", mcphost.MaxRemoteSchemaBytes, bytesUnit},
	{"mcphost.MaxRemoteSchemaDepth", mcphost.MaxRemoteSchemaDepth, countUnit},
	{"mcphost.MaxRemoteSchemaNodes", mcphost.MaxRemoteSchemaNodes, countUnit},
	{"mcphost.MaxOfferedSchemaNodes", mcphost.MaxOfferedSchemaNodes, countUnit},
	{"extensionhost.MaxWrongGuesses", extensionhost.MaxWrongGuesses, countUnit},
	{"mcp.MaxBodyBytes", mcp.MaxBodyBytes, bytesUnit},
	{"mcp.BodyReadBound", int64(mcp.BodyReadBound), duration},
	{"mcp.MaxSessions", mcp.MaxSessions, countUnit},
	{"mcp.SessionIdle", int64(mcp.SessionIdle), duration},
	{"core.GCHeadroomBytes", core.GCHeadroomBytes, bytesUnit},
	{"core.MaxGCPercent", core.MaxGCPercent, countUnit},
	{"mcp.MaxCallsPerClient", mcp.MaxCallsPerClient, countUnit},
	{"mcp.MaxBridgedCalls", mcp.MaxBridgedCalls, countUnit},
	{"mcp.MaxBridgedAnswerBytes", mcp.MaxBridgedAnswerBytes, bytesUnit},
	{"mcp.CancelNoticeBound", int64(mcp.CancelNoticeBound), duration},
	{"mcp.BridgeProcs", mcp.BridgeProcs, countUnit},
	{"hoststate.MaxMCPClients", hoststate.MaxMCPClients, countUnit},
	{"server.MaxBodyBytes", server.MaxBodyBytes, bytesUnit},
	{"server.HeaderTimeout", int64(server.HeaderTimeout), duration},
	{"server.BodyIdleTimeout", int64(server.BodyIdleTimeout), duration},
	{"server.BodyTimeout", int64(server.BodyTimeout), duration},
	{"server.IdleTimeout", int64(server.IdleTimeout), duration},
	{"server.MaxConnsPerClient", server.MaxConnsPerClient, countUnit},
	{"server.FDReserve", server.FDReserve, countUnit},
	{"wire.MaxFrameBytes", wire.MaxFrameBytes, bytesUnit},
	{"wire.MaxDepth", wire.MaxDepth, countUnit},
	{"outbound.QueueMessages", outbound.QueueMessages, countUnit},
	{"outbound.QueueBytes", outbound.QueueBytes, bytesUnit},
	{"outbound.WriteBound", int64(outbound.WriteBound), duration},
	{"hub.DefaultHelloBound", int64(hub.DefaultHelloBound), duration},
	{"hub.MaxControlBytes", hub.MaxControlBytes, bytesUnit},
	{"session.DefaultMaxSockets", session.DefaultMaxSockets, countUnit},
	{"session.DefaultMaxSessionSockets", session.DefaultMaxSessionSockets, countUnit},
	{"session.DefaultMaxSessionlessSockets", session.DefaultMaxSessionlessSockets, countUnit},
	{"session.DefaultMaxHelloSockets", session.DefaultMaxHelloSockets, countUnit},
	{"session.DefaultMaxHelloPerClient", session.DefaultMaxHelloPerClient, countUnit},
	{"session.DefaultMaxHelloPerOrigin", session.DefaultMaxHelloPerOrigin, countUnit},
	{"session.DefaultLifetime", int64(session.DefaultLifetime), duration},
	{"session.TicketLifetime", int64(session.TicketLifetime), duration},
	{"voice.DefaultMaxSockets", voice.DefaultMaxSockets, countUnit},
	{"voice.DefaultMaxSessionSockets", voice.DefaultMaxSessionSockets, countUnit},
	{"mcphost.MCPStreamLifetime", int64(mcphost.MCPStreamLifetime), duration},
}

func TestReferenceIsCurrent(t *testing.T) {
	root := moduleRoot(t)
	want := renderReference(t)
	path := filepath.Join(root, referenceFile)
	if *updateReference {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run go test ./%s -run TestReferenceIsCurrent -update and commit it", referenceFile, packageDir(t, root))
	}
}

// TestEnvironmentTableIsComplete: every environment variable the module's code reads (a string
// constant given to a Getenv, LookupEnv or orEnv, or held by a name ending in Env) is in the
// environment table, and the table names nothing the code does not read.
func TestEnvironmentTableIsComplete(t *testing.T) {
	t.Parallel()
	read := envVariablesRead(t, moduleRoot(t))
	listed := map[string]bool{}
	for _, v := range environment {
		if listed[v.Name] {
			t.Errorf("the environment table names %s twice", v.Name)
		}
		listed[v.Name] = true
		if v.Doc == "" {
			t.Errorf("%s has no meaning in the environment table", v.Name)
		}
		if _, ok := read[v.Name]; !ok {
			t.Errorf("the environment table names %s, which no code reads", v.Name)
		}
	}
	for name, where := range read {
		if !listed[name] {
			t.Errorf("%s (read at %s) is not in the environment table (%s/environment.go)", name, where, packageDir(t, moduleRoot(t)))
		}
	}
	if len(read) < 10 {
		t.Fatalf("found only %d variables read: the scan is broken", len(read))
	}
}

// TestEveryFlagOfAnEnvironmentVariableExists: the flag the table says wins over a variable is a
// flag of some command.
func TestEveryFlagOfAnEnvironmentVariableExists(t *testing.T) {
	t.Parallel()
	flags := map[string]bool{}
	for _, c := range subcommands {
		if c.flags != nil {
			c.flags().VisitAll(func(f *flag.Flag) { flags[f.Name] = true })
		}
	}
	for _, v := range environment {
		if v.Flag != "" && !flags[v.Flag] {
			t.Errorf("%s: no command has the flag --%s", v.Name, v.Flag)
		}
	}
}

// envReaders are the functions whose string-constant arguments name environment variables.
var envReaders = regexp.MustCompile(`^(Getenv|LookupEnv|getenv|orEnv)$`)

// envVariablesRead scans every non-test Go file of the module (not the tests module, not
// testdata, not the packages only tests import, named ...test) for the environment variables it reads, each with where it was first seen.
func envVariablesRead(t *testing.T, root string) map[string]string {
	t.Helper()
	read := map[string]string{}
	fset := token.NewFileSet()
	note := func(lit ast.Expr) {
		b, ok := lit.(*ast.BasicLit)
		if !ok || b.Kind != token.STRING {
			return
		}
		name, err := strconv.Unquote(b.Value)
		if err != nil || !regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`).MatchString(name) {
			return
		}
		if _, seen := read[name]; !seen {
			p := fset.Position(b.Pos())
			rel, _ := filepath.Rel(root, p.Filename)
			read[name] = fmt.Sprintf("%s:%d", filepath.ToSlash(rel), p.Line)
		}
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir // another module (tests/)
			}
			if path != root && strings.HasSuffix(d.Name(), "test") {
				return filepath.SkipDir // a package only tests import (fleettest's VOICEBOX_NATS_SERVER)
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				var name string
				switch fun := n.Fun.(type) {
				case *ast.Ident:
					name = fun.Name
				case *ast.SelectorExpr:
					name = fun.Sel.Name
				}
				if envReaders.MatchString(name) {
					for _, a := range n.Args {
						note(a)
					}
				}
			case *ast.ValueSpec:
				for i, id := range n.Names {
					if !strings.HasSuffix(id.Name, "Env") || i >= len(n.Values) {
						continue
					}
					ast.Inspect(n.Values[i], func(m ast.Node) bool {
						if e, ok := m.(ast.Expr); ok {
							note(e)
						}
						return true
					})
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return read
}

// packageDir is this package's folder from the module's root, as a go command names it.
func packageDir(t *testing.T, root string) string {
	t.Helper()
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(root, cwd)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.ToSlash(rel)
}

// moduleRoot is the folder of the go.mod above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above this package")
		}
		dir = parent
	}
}

func renderReference(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("<!-- Code generated by TestReferenceIsCurrent (the relay command's package); DO NOT EDIT. -->\n\n")
	b.WriteString("# Reference\n\n")
	b.WriteString("Generated from the code: the flag sets of the `relay` commands, the table of environment\n")
	b.WriteString("variables the relay reads, the bounds the guide quotes (each a Go constant with its doc\n")
	b.WriteString("comment) and every refusal id of `shared/refusal`. A test fails while this file is stale.\n")
	b.WriteString("The page reads no environment variable: what it needs reaches it from the relay.\n\n")
	b.WriteString("- [Commands and flags](#commands-and-flags)\n- [Environment](#environment)\n- [Bounds](#bounds)\n- [Refusal ids](#refusal-ids)\n")

	b.WriteString("\n## Commands and flags\n\n`relay` with no command is `relay serve`. `relay help` prints the same.\n")
	for _, c := range subcommands {
		fmt.Fprintf(&b, "\n### relay %s\n\n%s.\n", c.name, cell(c.summary))
		if c.flags == nil {
			b.WriteString("\nNo flags.\n")
			continue
		}
		b.WriteString("\n| flag | default | meaning |\n| --- | --- | --- |\n")
		c.flags().VisitAll(func(f *flag.Flag) {
			arg, usage := flag.UnquoteUsage(f)
			spelled := "--" + f.Name
			if arg != "" {
				spelled += " " + arg
			}
			def := f.DefValue
			if def == "" || def == "false" || def == "0" {
				def = ""
			} else {
				def = "`" + def + "`"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", spelled, def, cell(usage))
		})
	}

	b.WriteString("\n## Environment\n\nA flag, where there is one, wins over its variable.\n\n| variable | flag | meaning |\n| --- | --- | --- |\n")
	for _, v := range environment {
		fl := ""
		if v.Flag != "" {
			fl = "`--" + v.Flag + "`"
		}
		fmt.Fprintf(&b, "| <a id=\"env-%s\"></a>`%s` | %s | %s |\n", strings.ToLower(v.Name), v.Name, fl, cell(v.Doc))
	}

	b.WriteString("\n## Bounds\n\nThe limits the guide quotes, each the Go constant that enforces it (link to a row as\n`reference.md#` and the lowercased name with the dot as a dash, such as `#miniapp-messagebudget`).\n\n| bound | value | meaning |\n| --- | --- | --- |\n")
	imports := testFileImports(t)
	for _, bd := range referenceBounds {
		pkg, name, _ := strings.Cut(bd.name, ".")
		path, ok := imports[pkg]
		if !ok {
			t.Fatalf("bound %s: this file imports no package %s", bd.name, pkg)
		}
		docText := constDoc(t, path, name)
		if docText == "" {
			t.Errorf("bound %s has no doc comment", bd.name)
		}
		anchor := strings.ToLower(pkg + "-" + name)
		fmt.Fprintf(&b, "| <a id=\"%s\"></a>`%s` | %s | %s |\n", anchor, bd.name, bd.unit.format(bd.value), cell(docText))
	}

	b.WriteString("\n## Refusal ids\n\nEvery refusal is `{\"refused\": rule, \"why\": sentence}`; callers branch on the rule, never on\nthe sentence. The ids, grouped as `shared/refusal` declares them:\n")
	for _, sec := range refusalSections(t) {
		fmt.Fprintf(&b, "\n%s\n\n| rule | Go | meaning |\n| --- | --- | --- |\n", sec.title)
		for _, r := range sec.rules {
			fmt.Fprintf(&b, "| <a id=\"%s\"></a>`%s` | `refusal.%s` | %s |\n", r.id, r.id, r.goName, cell(r.doc))
		}
	}
	return b.Bytes()
}

// format writes a value as a person reads it.
func (u unit) format(v int64) string {
	switch u {
	case duration:
		d := time.Duration(v)
		switch {
		case d >= time.Hour && d%time.Hour == 0:
			return fmt.Sprintf("%d h", d/time.Hour)
		case d > 2*time.Minute && d%time.Minute == 0:
			return fmt.Sprintf("%d min", d/time.Minute)
		case d >= time.Second && d%time.Second == 0:
			return fmt.Sprintf("%d s", d/time.Second)
		}
		return fmt.Sprintf("%d ms", d/time.Millisecond)
	case bytesUnit:
		switch {
		case v >= 1<<20 && v%(1<<20) == 0:
			return fmt.Sprintf("%d MiB", v>>20)
		case v >= 1<<10 && v%(1<<10) == 0:
			return fmt.Sprintf("%d KiB", v>>10)
		}
		return fmt.Sprintf("%d bytes", v)
	}
	return thousands(v)
}

// thousands writes v with a comma every three digits.
func thousands(v int64) string {
	s := strconv.FormatInt(v, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// cell is text fit for one cell of a Markdown table: one line, no bare pipe.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

// testFileImports maps the names this file imports packages under to their import paths.
func testFileImports(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "reference_test.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, im := range f.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		out[name] = path
	}
	return out
}

// packageDoc reads the package at an import path with go/doc.
func packageDoc(t *testing.T, importPath string) (*doc.Package, *token.FileSet) {
	t.Helper()
	root := moduleRoot(t)
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindSubmatch(mod)
	if m == nil || !strings.HasPrefix(importPath, string(m[1])+"/") {
		t.Fatalf("%s is not a package of this module", importPath)
	}
	dir := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(importPath, string(m[1])+"/")))
	fset := token.NewFileSet()
	var files []*ast.File
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, importPath)
	if err != nil {
		t.Fatal(err)
	}
	return p, fset
}

// constDoc is the doc comment of a package's constant or variable: its own, else its line
// comment, else its declaration's.
func constDoc(t *testing.T, importPath, name string) string {
	t.Helper()
	p, _ := packageDoc(t, importPath)
	for _, v := range allValues(p) {
		for _, spec := range v.Decl.Specs {
			vs := spec.(*ast.ValueSpec)
			for _, id := range vs.Names {
				if id.Name != name {
					continue
				}
				switch {
				case vs.Doc != nil:
					return vs.Doc.Text()
				case vs.Comment != nil:
					return vs.Comment.Text()
				}
				return v.Doc
			}
		}
	}
	t.Fatalf("%s has no constant or variable %s", importPath, name)
	return ""
}

// allValues are a package's constants and variables, those go/doc files under their type too.
func allValues(p *doc.Package) []*doc.Value {
	vals := slices.Concat(p.Consts, p.Vars)
	for _, typ := range p.Types {
		vals = append(vals, typ.Consts...)
		vals = append(vals, typ.Vars...)
	}
	return vals
}

type refusalRule struct{ id, goName, doc string }

type refusalSection struct {
	title string
	rules []refusalRule
}

// refusalSections are shared/refusal's rule ids in declaration order. A comment above a rule
// that starts with the rule's Go name is that rule's own doc; any other comment heads a section
// of the rules after it.
func refusalSections(t *testing.T) []refusalSection {
	t.Helper()
	importPath := reflect.TypeFor[refusal.Rule]().PkgPath()
	p, _ := packageDoc(t, importPath)
	var secs []refusalSection
	seen := map[string]bool{}
	for _, v := range allValues(p) {
		if v.Decl.Tok != token.CONST {
			continue
		}
		for _, spec := range v.Decl.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, id := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				rule, _ := strconv.Unquote(lit.Value)
				own := ""
				if vs.Doc != nil {
					text := cell(vs.Doc.Text())
					heading := text
					if at := strings.Index(" "+text, " "+id.Name+" "); at >= 0 && (at == 0 || strings.HasSuffix(text[:at], ". ")) {
						heading, own = strings.TrimSpace(text[:at]), text[at:]
					}
					if heading != "" {
						secs = append(secs, refusalSection{title: heading})
					}
				}
				if own == "" && vs.Comment != nil {
					own = vs.Comment.Text()
				}
				if len(secs) == 0 {
					secs = append(secs, refusalSection{title: "Rules"})
				}
				if seen[rule] {
					t.Errorf("refusal id %q is declared twice", rule)
				}
				seen[rule] = true
				last := &secs[len(secs)-1]
				last.rules = append(last.rules, refusalRule{rule, id.Name, own})
			}
		}
	}
	if len(seen) < 50 {
		t.Fatalf("found only %d refusal ids: the scan is broken", len(seen))
	}
	return secs
}
