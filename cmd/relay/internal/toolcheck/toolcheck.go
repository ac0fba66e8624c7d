// Package toolcheck is `relay tool-check`: it runs the host's own declaration and argument checks
// on files, so a person writing a mini-app learns why a tool is refused without opening the page.
//
//	relay tool-check DECLARATION.json [ARGUMENTS.json]
//
// DECLARATION.json holds one tool declaration, {name, description, parameters} or the WebMCP
// spelling with inputSchema; ARGUMENTS.json, when given, one argument object to check against it.
// The verdict is printed as JSON on stdout:
//
//	{"ok": true, "declaration": {...normal form...}, "arguments": {...}}
//	{"ok": false, "refused": "invalid-tool-parameters", "why": "...", "declaration": {...}}
//
// ("declaration" appears on a refusal when the declaration passed and the arguments did not.)
// The exit status is 0 when accepted, 1 when refused and 2 on a usage error.
package toolcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/internal/shared/toolschema"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Usage is the line printed on a usage error.
const Usage = "usage: relay tool-check DECLARATION.json [ARGUMENTS.json]"

// Exit statuses.
const (
	ExitAccepted = 0
	ExitRefused  = 1
	ExitUsage    = 2
)

// argsReadLimit is how much of an arguments file is read: more than the argument bound, since
// insignificant whitespace does not count against it.
const argsReadLimit = 16 * toolschema.MaxArgumentBytes

type verdict struct {
	OK          bool            `json:"ok"`
	Refused     refusal.Rule    `json:"refused,omitempty"`
	Why         string          `json:"why,omitempty"`
	Declaration json.RawMessage `json:"declaration,omitempty"`
	Arguments   json.RawMessage `json:"arguments,omitempty"`
}

// Main runs the command with args, the words after "tool-check", and returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fmt.Fprintln(stdout, Usage)
		return ExitAccepted
	}
	if len(args) < 1 || len(args) > 2 {
		fmt.Fprintln(stderr, Usage)
		return ExitUsage
	}
	declRaw, err := readFile(args[0], miniapp.MaxDeclarationBytes)
	if err != nil {
		fmt.Fprintf(stderr, "tool-check: %v\n%s\n", err, Usage)
		return ExitUsage
	}
	var argsRaw []byte
	if len(args) == 2 {
		if argsRaw, err = readFile(args[1], argsReadLimit); err != nil {
			fmt.Fprintf(stderr, "tool-check: %v\n%s\n", err, Usage)
			return ExitUsage
		}
	}
	// A file cut off at the read bound is over every bound; say so rather than "not JSON".
	if len(declRaw) > miniapp.MaxDeclarationBytes {
		return report(stdout, refused(refusal.New(refusal.InvalidToolParameters,
			"the declaration is over the bound of %d bytes", miniapp.MaxDeclarationBytes), nil))
	}
	d, err := miniapp.ParseDeclaration(declRaw)
	if err != nil {
		return report(stdout, refused(err, nil))
	}
	v := verdict{OK: true, Declaration: d.JSON()}
	if argsRaw != nil {
		if len(argsRaw) > argsReadLimit {
			return report(stdout, refused(refusal.New(refusal.InvalidToolArguments,
				"the arguments are over %d bytes, far over the bound of %d bytes", argsReadLimit, toolschema.MaxArgumentBytes), d.JSON()))
		}
		valid, err := d.Parameters.Validate(argsRaw)
		if err != nil {
			return report(stdout, refused(err, d.JSON()))
		}
		if v.Arguments, err = json.Marshal(valid); err != nil {
			return report(stdout, refused(err, d.JSON()))
		}
	}
	return report(stdout, v)
}

func refused(err error, decl json.RawMessage) verdict {
	r, ok := refusal.As(err)
	if !ok {
		r = refusal.New(refusal.InternalError, "%v", err)
	}
	return verdict{Refused: r.Rule, Why: r.Why, Declaration: decl}
}

func report(w io.Writer, v verdict) int {
	b, err := json.Marshal(v)
	if err == nil {
		var out bytes.Buffer
		if err = json.Indent(&out, b, "", "  "); err == nil {
			out.WriteByte('\n')
			_, err = w.Write(out.Bytes())
		}
	}
	if err != nil {
		return ExitUsage
	}
	if v.OK {
		return ExitAccepted
	}
	return ExitRefused
}

// readFile reads at most limit+1 bytes of name, enough for the checks to see a file is too large.
func readFile(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit+1))
}
