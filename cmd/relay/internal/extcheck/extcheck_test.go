package extcheck

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/extensions"
)

// TestCatalogueVerdicts checks the shipped catalogue: every entry but the local stdio MCP server
// is admissible, and that one is refused exec-absent.
func TestCatalogueVerdicts(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		"web-search": "", "brave-search": "", "mcp-server-remote": "", "notes-reader": "", "text-tools": "",
		"mcp-server-local": "exec-absent",
	}
	files, _ := filepath.Glob("../../../../catalogue/*.json")
	if len(files) != len(want) {
		t.Fatalf("catalogue has %d files, want %d", len(files), len(want))
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		v := Check(raw, extensions.Machine)
		id := strings.TrimSuffix(filepath.Base(f), ".json")
		if v.ID != id || v.Refused != want[id] || v.OK != (want[id] == "") {
			t.Errorf("%s: verdict %+v, want refused %q", id, v, want[id])
		}
	}
}

func TestMainExitStatus(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if code := Main([]string{"../../../../catalogue/notes-reader.json", "--placement", "page"}, &out, io.Discard); code != ExitAdmissible || !strings.Contains(out.String(), `"host-primitive-scope"`) {
		t.Fatalf("admissible: exit %d, %s", code, out.String())
	}
	out.Reset()
	if code := Main([]string{"--placement=machine", "../../../../catalogue/mcp-server-local.json"}, &out, io.Discard); code != ExitRefused || !strings.Contains(out.String(), `"exec-absent"`) {
		t.Fatalf("refused: exit %d, %s", code, out.String())
	}
	if code := Main([]string{"--placement=moon", "x.json"}, io.Discard, io.Discard); code != ExitUsage {
		t.Fatalf("bad placement: exit %d", code)
	}
}
