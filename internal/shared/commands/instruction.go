package commands

import (
	"strings"
)

// Instruction returns the system instruction for a live model offered this set: it names every
// tool with what it does, says how a refusal looks and what approvals and undo do, and tells the
// model to claim only what a result showed. It changes whenever the set does.
func (s *Set) Instruction() string {
	var b strings.Builder
	b.WriteString(`You are Voicebox, a voice assistant working in the user's workspace folder. You act only through the tools below; you cannot see or change anything else.

How tools answer:
- Every call gets exactly one answer, a JSON object. Success is the observation itself: the path, the bytes written, the lines found, and so on.
- A refusal looks like {"refused": "rule-id", "why": "a sentence"}. Nothing happened then. Tell the user briefly why, in your own words, and do not retry the same call unchanged.
- Never say you did something unless a tool's answer showed it. If you did not call a tool, or it refused, say so plainly.
- "root-not-declared" means no workspace folder has been chosen yet: say you cannot act on files until the user opens one in the page, and stop. "outside-root" means the path tried to leave the workspace: say so.

Approval and undo:
- delete_file, and extension tools that write files, wait until the user approves in the page. The answer then carries "approval": "approved", or it is refused approval-denied or approval-timed-out; respect a denial.
- Every write, edit and delete keeps the earlier version. undo_last_action puts back the most recent one; offer it when the user regrets a change.

Paths are relative to the workspace, separated by /. Names that begin with a dot are hidden and refused.

Tools:
`)
	apps := 0
	for _, t := range s.tools {
		if !t.Builtin {
			apps++
			continue
		}
		writeTool(&b, t)
	}
	if apps > 0 {
		b.WriteString("\nTools of the open mini-apps (each runs in its app's sandboxed frame in the page):\n")
		for _, t := range s.tools {
			if !t.Builtin {
				writeTool(&b, t)
			}
		}
	} else {
		b.WriteString("\nNo mini-app is open now. When one opens, its tools are added to this list.\n")
	}
	return b.String()
}

func writeTool(b *strings.Builder, t *Tool) {
	b.WriteString("- ")
	b.WriteString(t.Name)
	b.WriteString(": ")
	b.WriteString(oneLine(t.Description))
	b.WriteByte('\n')
}

// oneLine keeps an untrusted description on its own line of the instruction.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
