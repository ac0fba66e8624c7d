// Package extcheck is `relay extension-check`: it runs the extension gate on a descriptor file and
// prints the verdict and, when admissible, the disclosure plan.
//
//	relay extension-check DESCRIPTOR.json [--placement page|machine]
//
// The verdict is JSON on stdout:
//
//	{"ok": true, "id": "...", "plan": {...}}
//	{"ok": false, "id": "...", "refused": "exec-absent", "why": "..."}
//
// The exit status is 0 when admissible, 1 when refused and 2 on a usage error.
package extcheck

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/voicebox-go/voicebox/internal/shared/extensions"
)

// Usage is the line printed on a usage error.
const Usage = "usage: relay extension-check DESCRIPTOR.json [--placement page|machine]"

// Exit statuses.
const (
	ExitAdmissible = 0
	ExitRefused    = 1
	ExitUsage      = 2
)

// Verdict is what the checker prints.
type Verdict struct {
	OK      bool             `json:"ok"`
	ID      string           `json:"id,omitempty"`
	Refused string           `json:"refused,omitempty"`
	Why     string           `json:"why,omitempty"`
	Plan    *extensions.Plan `json:"plan,omitempty"`
}

// Check runs the gate on raw for placement.
func Check(raw []byte, placement extensions.Placement) Verdict {
	d, r := extensions.Parse(raw)
	if r != nil {
		return Verdict{Refused: string(r.Rule), Why: r.Why}
	}
	if r := extensions.Admit(d, placement, nil); r != nil {
		return Verdict{ID: d.ID, Refused: string(r.Rule), Why: r.Why}
	}
	p := extensions.Disclose(d, placement, raw)
	return Verdict{OK: true, ID: d.ID, Plan: &p}
}

// Flags is the subcommand's flag set: --placement.
func Flags(stderr io.Writer) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("extension-check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs, fs.String("placement", "page", "where the tools would run: page or machine")
}

// Main is the subcommand.
func Main(args []string, stdout, stderr io.Writer) int {
	fs, placement := Flags(stderr)
	var files []string
	for len(args) > 0 { // the file may come before or after the flag
		if err := fs.Parse(args); err != nil {
			return ExitUsage
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(files) != 1 || (*placement != "page" && *placement != "machine") {
		fmt.Fprintln(stderr, Usage)
		return ExitUsage
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		fmt.Fprintf(stderr, "extension-check: %v\n", err)
		return ExitUsage
	}
	v := Check(raw, extensions.Placement(*placement))
	out, _ := json.MarshalIndent(v, "", "  ")
	fmt.Fprintln(stdout, string(out))
	if v.OK {
		return ExitAdmissible
	}
	return ExitRefused
}
