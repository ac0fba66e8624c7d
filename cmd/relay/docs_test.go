package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxReadmeLines bounds the README: a front page (what Voicebox is, a picture, the two commands,
// the first ten minutes, links), with the manual in docs/.
const maxReadmeLines = 250

// TestReadmeKeepsItsPromises: the README is at most maxReadmeLines long, and its two commands
// and the address it promises are the ones build.sh and the relay have.
func TestReadmeKeepsItsPromises(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	readme := readDoc(t, root, "README.md")
	if n := strings.Count(readme, "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines; at most %d (move the detail into docs/)", n, maxReadmeLines)
	}
	script := readDoc(t, root, "build.sh")
	for _, cmd := range []string{"run", "test"} {
		if !strings.Contains(readme, "./build.sh "+cmd) {
			t.Errorf("README.md does not show ./build.sh %s", cmd)
		}
		if !regexp.MustCompile(`(?m)^` + cmd + `\) `).MatchString(script) {
			t.Errorf("build.sh has no %s command, which the README promises", cmd)
		}
	}
	if addr := fmt.Sprintf("http://127.0.0.1:%d", DefaultPort); !strings.Contains(readme, addr) {
		t.Errorf("README.md does not give the address the relay listens on by default, %s", addr)
	}
}

// docFiles are the Markdown files a person reads, from the module's root.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md", "SECURITY.md", "BENCHMARKS.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range more {
		rel, _ := filepath.Rel(root, f)
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

func readDoc(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mdLink is a Markdown link: its text and its target.
var mdLink = regexp.MustCompile(`\[([^\]\n]*)\]\(([^)\s]+)\)`)

// anchors are the fragments a Markdown file answers: its headings' (as GitHub spells them) and
// its explicit <a id>s.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`<a id="([^"]+)">`).FindAllStringSubmatch(text, -1) {
		out[m[1]] = true
	}
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		h = regexp.MustCompile(`[^\p{L}\p{N} _-]`).ReplaceAllString(h, "")
		out[strings.ReplaceAll(h, " ", "-")] = true
	}
	return out
}

// TestDocsLinksResolve: every relative link of the README, SECURITY.md, BENCHMARKS.md and
// docs/ names a file of the repository, and a fragment names a heading or an anchor there.
func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	for _, file := range docFiles(t, root) {
		text := readDoc(t, root, file)
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[2]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			resolved := file
			if path != "" {
				resolved = filepath.ToSlash(filepath.Join(filepath.Dir(file), path))
			}
			info, err := os.Stat(filepath.Join(root, filepath.FromSlash(resolved)))
			if err != nil {
				t.Errorf("%s: link %q names %s, which does not exist", file, target, resolved)
				continue
			}
			if frag == "" || info.IsDir() || !strings.HasSuffix(resolved, ".md") {
				continue
			}
			if !anchors(readDoc(t, root, resolved))[frag] {
				t.Errorf("%s: link %q: %s has no heading or anchor %q", file, target, resolved, frag)
			}
		}
	}
}

// TestQuotedBoundsMatchTheReference: a bound the docs quote by number links to its row in
// docs/reference.md, and the number is the one the reference (so the code) has. A bound whose
// value changes fails here until every quote of it is changed too.
func TestQuotedBoundsMatchTheReference(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	values := map[string]string{}
	row := regexp.MustCompile("(?m)^\\| <a id=\"([^\"]+)\"></a>`[^`]+` \\| ([^|]+) \\|")
	for _, m := range row.FindAllStringSubmatch(string(renderReference(t)), -1) {
		values[m[1]] = strings.TrimSpace(m[2])
	}
	quoted := 0
	for _, file := range docFiles(t, root) {
		for _, m := range mdLink.FindAllStringSubmatch(readDoc(t, root, file), -1) {
			_, frag, ok := strings.Cut(m[2], "reference.md#")
			if !ok || !regexp.MustCompile(`[0-9]`).MatchString(m[1]) {
				continue
			}
			want, known := values[frag]
			switch {
			case !known:
				t.Errorf("%s: %q links to reference.md#%s, which is not a bound", file, m[1], frag)
			case m[1] != want:
				t.Errorf("%s: quotes %s as %q; the reference (the code) has %q", file, frag, m[1], want)
			}
			quoted++
		}
	}
	if quoted == 0 {
		t.Fatal("no document quotes a bound through the reference")
	}
}

// TestBuildSaysWhatItDoes: `./build.sh run` (and build) runs each of its long steps through
// step, which names the step, says every few seconds how long it has taken, and when it is done:
// a first build runs for a minute or more and must not look hung.
func TestBuildSaysWhatItDoes(t *testing.T) {
	t.Parallel()
	script := readDoc(t, moduleRoot(t), "build.sh")
	start := strings.Index(script, "\ncmd_build() {")
	if start < 0 {
		t.Fatal("build.sh has no cmd_build")
	}
	body := script[start : start+strings.Index(script[start:], "\n}\n")]
	if !strings.Contains(script, "\nstep() {") {
		t.Fatal("build.sh has no step function")
	}
	steps := 0
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "step ") {
			steps++
		}
		if strings.Contains(line, "go build") && !strings.HasPrefix(line, "env GOOS") && !strings.HasPrefix(line, "go build") {
			t.Errorf("build.sh's cmd_build runs %q outside a step", line)
		}
	}
	if steps < 3 {
		t.Errorf("build.sh's cmd_build names %d steps; want its three (the page, its compression, the relay)", steps)
	}
}

// readmeFirstScreen is how many lines of the README a newcomer sees first: what they need before
// anything else (the port, where the files live, the gate) is there.
const readmeFirstScreen = 45

// TestReadmeSaysWhatANewcomerNeedsFirst: the README's first screen gives the printed address,
// says the gate is off with the one setting that turns it on, and where the files live and how
// to get them out; every command of the binary it writes is bin/relay's (the binary the build
// makes), and a bearer file it reads is one an earlier line of it creates.
func TestReadmeSaysWhatANewcomerNeedsFirst(t *testing.T) {
	t.Parallel()
	readme := readDoc(t, moduleRoot(t), "README.md")
	lines := strings.Split(readme, "\n")
	first := strings.Join(strings.Fields(strings.Join(lines[:min(readmeFirstScreen, len(lines))], "\n")), " ")
	for _, want := range []string{fmt.Sprintf("http://127.0.0.1:%d", DefaultPort), "gate is off", "any process", "VOICEBOX_LOOPBACK_AUTH=1 ./build.sh run", "Browser storage of", "Download all", ".voicebox/history/"} {
		if !strings.Contains(first, want) {
			t.Errorf("the README's first %d lines do not say %q", readmeFirstScreen, want)
		}
	}
	commands := map[string]bool{}
	for _, c := range subcommands {
		commands[c.name] = true
	}
	for _, m := range regexp.MustCompile("(^|[^/\\w])relay ([a-z-]+)").FindAllStringSubmatch(codeOf(readme), -1) {
		if commands[m[2]] {
			t.Errorf("the README writes `relay %s`; the binary the build makes is bin/relay", m[2])
		}
	}
	for _, m := range regexp.MustCompile(`(?:--bearer-file|\$\(cat) (\S+?)\)?(?:\s|$)`).FindAllStringSubmatchIndex(readme, -1) {
		file := readme[m[2]:m[3]]
		if !strings.Contains(readme[:m[0]], "> "+file) {
			t.Errorf("the README reads the bearer file %s that no earlier step of it creates", file)
		}
	}
}

// codeOf returns the code of a Markdown text: its fenced blocks and inline code spans.
func codeOf(md string) string {
	var b strings.Builder
	inFence := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			b.WriteString(line + "\n")
			continue
		}
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(line, -1) {
			b.WriteString(m[1] + "\n")
		}
	}
	return b.String()
}
