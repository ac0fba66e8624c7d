package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/extensions"
)

// TestReservedSecretsCoverWhatTheRelayReads reads the relay's source for every environment
// variable it reads (os.Getenv, os.LookupEnv, orEnv, and values named ...Env such as the vendors'
// KeyEnv and the voice settings' ProviderEnv) and
// checks that no extension could declare one as a secret: a new variable of the relay that is
// not reserved fails here.
func TestReservedSecretsCoverWhatTheRelayReads(t *testing.T) {
	t.Parallel()
	found := map[string]string{}
	fset := token.NewFileSet()
	var err error
	for _, dir := range []string{".", filepath.Join("..", "..", "internal")} { // the command, and the relay's packages
		if err != nil {
			break
		}
		err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					name := ""
					switch fn := n.Fun.(type) {
					case *ast.SelectorExpr:
						name = fn.Sel.Name
					case *ast.Ident:
						name = fn.Name
					}
					if name == "Getenv" || name == "LookupEnv" || name == "orEnv" {
						for _, a := range n.Args {
							if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING {
								v, _ := strconv.Unquote(lit.Value)
								found[v] = fset.Position(lit.Pos()).String()
							}
						}
					}
				case *ast.ValueSpec:
					// Names of variables kept in values named ...Env (KeyEnv, ProviderEnv), read
					// through a getenv function.
					for i, id := range n.Names {
						if !strings.HasSuffix(id.Name, "Env") || i >= len(n.Values) {
							continue
						}
						ast.Inspect(n.Values[i], func(v ast.Node) bool {
							if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
								s, _ := strconv.Unquote(lit.Value)
								found[s] = fset.Position(lit.Pos()).String()
							}
							return true
						})
					}
				}
				return true
			})
			return nil
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"OPENAI_API_KEY", "GEMINI_API_KEY", "MINI_APPS", "PORT", "LIVE_PROVIDER"} {
		if _, ok := found[want]; !ok {
			t.Errorf("the scan missed %s, which the relay reads; the test no longer sees what it checks", want)
		}
	}
	for name, where := range found {
		if !extensions.SecretReserved(name) {
			t.Errorf("the relay reads $%s (%s), and an extension could declare it as a secret: add it to extensions.ReservedSecrets", name, where)
		}
	}
}
