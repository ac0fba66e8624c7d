package toolcheck

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

const setScore = `{"name":"set_score","description":"Add points to a team on the scoreboard",
  "parameters":{"type":"object","properties":{"team":{"type":"string","enum":["home","away"]},
  "points":{"type":"number","description":"Points to add"}},"required":["team","points"]}}`

func TestToolCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := file("good.json", setScore)
	webmcp := file("webmcp.json", `{"name":"t","description":"d","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`)
	pattern := file("pattern.json", `{"name":"t","description":"d","parameters":{"type":"object","properties":{"count":{"type":"string","pattern":"x"}}}}`)
	badName := file("badname.json", `{"name":"set score","description":"d"}`)
	okArgs := file("ok-args.json", `{"team":"home","points":3}`)
	enumArgs := file("enum-args.json", `{"team":"visitors","points":3}`)
	bigArgs := file("big-args.json", `{"team":"home","points":3,"x":"`+strings.Repeat("x", 70000)+`"}`)
	hugeArgs := file("huge-args.json", `{"team":"home","points":3,"x":"`+strings.Repeat("x", argsReadLimit)+`"}`)
	hugeDecl := file("huge-decl.json", `{"name":"t","description":"`+strings.Repeat("d", 70000)+`"}`)

	tests := []struct {
		name     string
		args     []string
		exit     int
		rule     refusal.Rule
		why      string
		wantDecl bool
		wantArgs string
		stderr   string
	}{
		{name: "accepted", args: []string{good}, exit: 0, wantDecl: true},
		{name: "accepted WebMCP", args: []string{webmcp}, exit: 0, wantDecl: true},
		{name: "accepted with arguments", args: []string{good, okArgs}, exit: 0, wantDecl: true, wantArgs: `{"points":3,"team":"home"}`},
		{name: "schema refused", args: []string{pattern}, exit: 1, rule: refusal.InvalidToolParameters, why: "properties.count.pattern"},
		{name: "name refused", args: []string{badName}, exit: 1, rule: refusal.InvalidToolName},
		{name: "arguments refused", args: []string{good, enumArgs}, exit: 1, rule: refusal.InvalidArgumentEnum, why: "visitors", wantDecl: true},
		{name: "arguments too large", args: []string{good, bigArgs}, exit: 1, rule: refusal.InvalidToolArguments, why: "65536", wantDecl: true},
		{name: "arguments file cut off", args: []string{good, hugeArgs}, exit: 1, rule: refusal.InvalidToolArguments, why: "bound", wantDecl: true},
		{name: "declaration file too large", args: []string{hugeDecl}, exit: 1, rule: refusal.InvalidToolParameters, why: "bound"},
		{name: "no arguments", args: nil, exit: 2, stderr: "usage: relay tool-check"},
		{name: "too many arguments", args: []string{good, okArgs, okArgs}, exit: 2, stderr: "usage: relay tool-check"},
		{name: "missing file", args: []string{filepath.Join(dir, "nope.json")}, exit: 2, stderr: "usage: relay tool-check"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			if got := Main(tt.args, &stdout, &stderr); got != tt.exit {
				t.Fatalf("exit %d, want %d; stdout %s stderr %s", got, tt.exit, stdout.String(), stderr.String())
			}
			if tt.exit == 2 {
				if !strings.Contains(stderr.String(), tt.stderr) || stdout.Len() != 0 {
					t.Fatalf("usage error: stdout %q stderr %q", stdout.String(), stderr.String())
				}
				return
			}
			var v struct {
				OK          bool            `json:"ok"`
				Refused     refusal.Rule    `json:"refused"`
				Why         string          `json:"why"`
				Declaration json.RawMessage `json:"declaration"`
				Arguments   json.RawMessage `json:"arguments"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &v); err != nil {
				t.Fatalf("stdout is not JSON: %v: %s", err, stdout.String())
			}
			if v.OK != (tt.exit == 0) || v.Refused != tt.rule || !strings.Contains(v.Why, tt.why) {
				t.Fatalf("verdict %+v, want rule %q with %q", v, tt.rule, tt.why)
			}
			if (v.Declaration != nil) != tt.wantDecl {
				t.Fatalf("declaration present = %v, want %v", v.Declaration != nil, tt.wantDecl)
			}
			if tt.wantArgs != "" {
				var compact bytes.Buffer
				json.Compact(&compact, v.Arguments)
				if compact.String() != tt.wantArgs {
					t.Fatalf("arguments = %s, want %s", compact.String(), tt.wantArgs)
				}
			}
		})
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	if got := Main([]string{"--help"}, &stdout, &stderr); got != 0 || !strings.HasPrefix(stdout.String(), Usage) {
		t.Fatalf("--help: exit %d, stdout %q", got, stdout.String())
	}
}
