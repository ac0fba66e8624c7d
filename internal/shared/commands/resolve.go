package commands

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// MaxTranscriptBytes bounds a transcript the resolver reads; a longer one is not understood.
const MaxTranscriptBytes = 1 << 20

// Resolution is what the offline resolver made of a transcript: a tool and its arguments with a
// sentence saying how it understood them, the help text, or a not-understood refusal.
type Resolution struct {
	// Name and Args are the call, for Set.Map; Name is "" when there is none (help, or Err).
	Name string
	Args json.RawMessage
	// Understood says what the resolver took the transcript to mean.
	Understood string
	// Help is the list of commands, for "help" and for what was not understood.
	Help string
	// Err is a not-understood refusal.
	Err error
	// NewFile marks a write_file typed as create, new or make: the person asked for a new file,
	// so the caller must refuse it when the file exists (the resolver cannot see the workspace)
	// rather than replace what is there.
	NewFile bool
}

// Help lists the typed commands the offline resolver understands.
const Help = `Commands I understand (names are paths in your workspace):
  list files · list files in docs        read notes.md · show docs/plan.txt
  write todo.txt: buy milk               delete old.txt   (you approve it first)
  in notes.md replace "old" with "new"   search for milk · search for "milk" in docs
  open timer · list apps                 create app Counter: <!doctype html>…
  list extensions · call web_search {"query":"weather"} · propose extension {…}
  diff notes.md: new text                list tools · search tools for diff
  create a tool called clock that tells the time
  undo · redo                            help`

// Resolve turns a typed command into a call of a built-in tool. It is deterministic: the same
// transcript always gives the same resolution, and it never guesses past the forms Help lists.
// Keywords are matched ignoring case; names and text are kept as typed. A name may be quoted
// ("my notes.md"); so may the texts of a replacement or a search.
func Resolve(transcript string) Resolution {
	text := strings.TrimSpace(transcript)
	if len(text) > MaxTranscriptBytes || !utf8.ValidString(text) {
		return notUnderstood("that is not a command I can read (too long, or not text)")
	}
	if r, ok := resolveMakeTool(text); ok {
		return r
	}
	verb, rest := splitWord(text)
	lv := strings.ToLower(verb)
	lrest := strings.ToLower(strings.TrimRight(rest, ".!?"))
	switch lv {
	case "help", "?", "commands":
		return Resolution{Understood: "You asked what I can do.", Help: Help}
	case "undo":
		switch lrest {
		case "", "last", "that", "it", "this", "last action", "the last action", "last change", "the last change":
			return call(UndoLastAction, nil, "Undo the last change.")
		}
	case "redo":
		switch lrest {
		case "", "last", "that", "it", "this", "last action", "the last action", "last change", "the last change":
			return call(RedoLastAction, nil, "Redo the change undone last.")
		}
	case "diff", "preview":
		name, content, ok := strings.Cut(rest, ":")
		name = unquote(strings.TrimSpace(cutPrefixFold(strings.TrimSpace(name), "file ")))
		if ok && name != "" {
			content = strings.TrimPrefix(content, " ")
			return call(DiffFile, map[string]string{"name": name, "content": content},
				fmt.Sprintf("Show what writing %s to %s would change, without writing.", countOf(len(content), "byte"), name))
		}
	case "tools":
		if lrest == "" {
			return call(ListTools, nil, "List every tool I can use.")
		}
	case "ls", "dir", "list", "show", "what", "which":
		if r, ok := resolveTools(lv, lrest); ok {
			return r
		}
		if r, ok := resolveList(lv, strings.TrimRight(rest, ".!?"), lrest); ok {
			return r
		}
		if lv == "show" && rest != "" {
			return resolveRead(rest)
		}
	case "read", "cat", "view", "print":
		if rest != "" {
			return resolveRead(rest)
		}
	case "open", "launch", "start", "run":
		if rest != "" {
			return resolveOpen(lv, rest)
		}
	case "write", "save", "put", "create", "new", "make":
		if r, ok := resolveCreate(lv, rest); ok {
			return r
		}
	case "delete", "remove", "rm", "del", "erase":
		if name := unquote(strings.TrimRight(rest, ".!?")); name != "" {
			return call(DeleteFile, map[string]string{"name": name}, fmt.Sprintf("Delete %s, once you approve it.", name))
		}
	case "edit", "in", "replace", "change":
		if r, ok := resolveEdit(lv, rest); ok {
			return r
		}
	case "search", "grep", "find", "look":
		if q, ok := cutPrefixWord(lrest, "tools"); ok || strings.HasPrefix(lrest, "tool ") {
			if !ok {
				q, _ = cutPrefixWord(lrest, "tool")
			}
			q, _ = cutPrefixWord(q, "for")
			if q = unquote(q); q != "" {
				return call(SearchTools, map[string]string{"query": q}, fmt.Sprintf("Search the tools for %q.", q))
			}
		}
		if r, ok := resolveSearch(lv, rest); ok {
			return r
		}
	case "call", "use":
		if r, ok := resolveCall(rest); ok {
			return r
		}
	case "propose":
		body := strings.TrimSpace(cutPrefixFold(rest, "extension"))
		body = strings.TrimSpace(strings.TrimPrefix(body, ":"))
		if strings.HasPrefix(body, "{") {
			return call(ProposeExtension, map[string]string{"descriptor": body}, fmt.Sprintf("Propose an extension from %s of JSON; a person must admit it before it runs.", countOf(len(body), "byte")))
		}
	case "extensions":
		if lrest == "" {
			return call(ListExtensions, nil, "List the extensions.")
		}
	case "apps", "mini-apps":
		if lrest == "" {
			return call(ListMiniApps, nil, "List the mini-apps.")
		}
	case "files":
		if lrest == "" {
			return call(ListFiles, nil, "List the files at the top of the workspace.")
		}
	}
	return notUnderstood(fmt.Sprintf("I did not understand %q", clip(text)))
}

func notUnderstood(why string) Resolution {
	return Resolution{Help: Help, Err: refusal.New(refusal.NotUnderstood, "%s; type help to see the commands I know", why)}
}

func call(name string, args map[string]string, understood string) Resolution {
	if args == nil {
		args = map[string]string{}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(args)
	return Resolution{Name: name, Args: bytes.TrimRight(b.Bytes(), "\n"), Understood: understood}
}

// resolveTools reads "list tools", "show all tools", "list extension tools", "what tools do you
// have", "what tools are there for X".
func resolveTools(verb, lrest string) (Resolution, bool) {
	rest := strings.TrimPrefix(lrest, "all ")
	switch rest {
	case "tools", "tools do you have", "tools are there", "tools can you use":
		return call(ListTools, nil, "List every tool I can use."), true
	}
	for _, kind := range []string{"native", "extension", "mini-app"} {
		if rest == kind+" tools" {
			return call(ListTools, map[string]string{"kind": kind}, fmt.Sprintf("List the %s tools.", kind)), true
		}
	}
	if verb == "what" {
		for _, p := range []string{"tools do you have for ", "tools are there for ", "tools for "} {
			if q, ok := strings.CutPrefix(rest, p); ok && q != "" {
				return call(SearchTools, map[string]string{"query": q}, fmt.Sprintf("Search the tools for %q.", q)), true
			}
		}
	}
	return Resolution{}, false
}

// resolveList reads "list files [in DIR]", "ls DIR", "list apps", "what files are there", ...
func resolveList(verb, rest, lrest string) (Resolution, bool) {
	switch lrest {
	case "apps", "mini-apps", "mini apps", "miniapps", "the apps", "the mini-apps", "all apps", "my apps":
		return call(ListMiniApps, nil, "List the mini-apps."), true
	case "extensions", "the extensions", "all extensions":
		return call(ListExtensions, nil, "List the extensions."), true
	case "", "files", "the files", "all files", "my files", "files are there", "files are here", "files do i have", "files there are":
		if verb == "show" && lrest == "" {
			return Resolution{}, false
		}
		return call(ListFiles, nil, "List the files at the top of the workspace."), true
	}
	dir := rest
	for _, p := range []string{"the files in", "files in", "files of", "the folder", "folder", "in"} {
		if d, ok := cutPrefixWord(dir, p); ok {
			dir = d
			break
		}
	}
	if verb == "show" || verb == "what" || verb == "which" {
		if dir == rest { // "show notes.md" reads a file; "show files in x" lists
			return Resolution{}, false
		}
	}
	dir = strings.TrimSuffix(unquote(dir), "/")
	if dir == "" || strings.ContainsAny(dir, " \t") && !quoted(strings.TrimSpace(rest)) && dir == rest {
		return Resolution{}, false
	}
	return call(ListFiles, map[string]string{"dir": dir}, fmt.Sprintf("List the files in %s.", dir)), true
}

func resolveRead(rest string) Resolution {
	name := unquote(strings.TrimRight(strings.TrimSpace(cutPrefixFold(rest, "file")), ".!?"))
	if name == "" {
		return notUnderstood("read which file? Say read and its name")
	}
	return call(ReadFile, map[string]string{"name": name}, fmt.Sprintf("Read %s.", name))
}

// resolveOpen opens a file that is not HTML as read does, and anything else as a mini-app.
func resolveOpen(verb, rest string) Resolution {
	target := unquote(strings.TrimRight(strings.TrimSpace(rest), ".!?"))
	if looksLikeFile(target) && !strings.HasSuffix(strings.ToLower(target), ".html") && verb == "open" {
		return resolveRead(target)
	}
	name := target
	if !quoted(strings.TrimSpace(rest)) {
		name = cutPrefixFold(name, "the ")
		for _, s := range []string{" mini-app", " miniapp", " app"} {
			if len(name) > len(s) && strings.EqualFold(name[len(name)-len(s):], s) {
				name = name[:len(name)-len(s)]
				break
			}
		}
		name = strings.TrimSpace(name)
	}
	return call(LaunchMiniApp, map[string]string{"name": name}, fmt.Sprintf("Open the mini-app %q.", name))
}

// resolveCreate reads "write NAME: TEXT", "create file NAME", "create app TITLE: HTML", ...
func resolveCreate(verb, rest string) (Resolution, bool) {
	kind, body := splitWord(rest)
	switch strings.ToLower(kind) {
	case "app", "mini-app", "miniapp":
		if verb == "write" || verb == "save" || verb == "put" {
			break
		}
		title, html, ok := strings.Cut(body, ":")
		title, html = unquote(strings.TrimSpace(title)), strings.TrimSpace(html)
		if !ok || title == "" || html == "" {
			return notUnderstood("to make an app, say: create app TITLE: followed by its HTML"), true
		}
		return call(CreateMiniApp, map[string]string{"title": title, "html": html},
			fmt.Sprintf("Create the mini-app %q from %s of HTML, and open it.", title, countOf(len(html), "byte"))), true
	case "file":
		rest = body
	}
	name, content, ok := strings.Cut(rest, ":")
	name = unquote(strings.TrimSpace(name))
	if !ok {
		if verb == "write" || verb == "save" || verb == "put" || !looksLikeFile(name) {
			return Resolution{}, false
		}
		content = ""
	} else {
		content = strings.TrimPrefix(content, " ")
	}
	if name == "" {
		return Resolution{}, false
	}
	r := call(WriteFile, map[string]string{"name": name, "content": content},
		fmt.Sprintf("Write %s to %s.", countOf(len(content), "byte"), name))
	r.NewFile = verb == "create" || verb == "new" || verb == "make"
	return r, true
}

// resolveEdit reads "in NAME replace A with B", "edit NAME: replace A with B" and
// "replace A with B in NAME".
func resolveEdit(verb, rest string) (Resolution, bool) {
	var name, change string
	switch verb {
	case "in", "edit", "change":
		before, after, ok := cutFold(rest, "replace ")
		if !ok {
			return Resolution{}, false
		}
		name = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(before), ":"))
		name = strings.TrimSpace(strings.TrimSuffix(name, ","))
		change = after
	case "replace":
		i := lastIndexFold(rest, " in ")
		if i < 0 {
			return Resolution{}, false
		}
		name, change = strings.TrimSpace(rest[i+4:]), rest[:i]
		name = strings.TrimRight(name, ".!?")
	}
	name = unquote(name)
	oldText, newText, ok := splitWith(change)
	if name == "" || !ok {
		return notUnderstood(`to edit, say: in NAME replace "old text" with "new text"`), true
	}
	return call(EditFile, map[string]string{"name": name, "oldText": oldText, "newText": newText},
		fmt.Sprintf("In %s, replace %q with %q.", name, oldText, newText)), true
}

// splitWith reads `A with B`, where A and B may be quoted.
func splitWith(s string) (a, b string, ok bool) {
	s = strings.TrimSpace(s)
	if q, rest, ok := leadingQuoted(s); ok {
		rest = strings.TrimSpace(rest)
		if r, ok := cutPrefixWord(rest, "with"); ok {
			return q, unquote(strings.TrimSpace(r)), true
		}
		return "", "", false
	}
	i := indexFold(s, " with ")
	if i < 0 {
		return "", "", false
	}
	return s[:i], unquote(strings.TrimSpace(s[i+6:])), true
}

// resolveSearch reads "search for TEXT [in DIR]", "grep TEXT", "find TEXT", "look for TEXT".
func resolveSearch(verb, rest string) (Resolution, bool) {
	q := strings.TrimSpace(rest)
	if r, ok := cutPrefixWord(q, "for"); ok {
		q = r
	} else if verb == "look" {
		return Resolution{}, false
	}
	q = strings.TrimRight(q, ".!?")
	dir := ""
	if text, after, ok := leadingQuoted(q); ok {
		q = text
		if d, ok := cutPrefixWord(strings.TrimSpace(after), "in"); ok {
			dir = unquote(strings.TrimSpace(d))
		}
	} else if i := lastIndexFold(q, " in "); i >= 0 && !strings.ContainsAny(strings.TrimSpace(q[i+4:]), " \t") {
		q, dir = q[:i], strings.TrimSpace(q[i+4:])
	}
	if q == "" {
		return notUnderstood("search for what? Say search for and the text"), true
	}
	args := map[string]string{"query": q}
	understood := fmt.Sprintf("Search the workspace for %q.", q)
	if dir != "" {
		args["dir"] = strings.TrimSuffix(dir, "/")
		understood = fmt.Sprintf("Search %s for %q.", args["dir"], q)
	}
	return call(GrepFiles, args, understood), true
}

// resolveCall reads "call [extension] TOOL [with] [JSON]".
func resolveCall(rest string) (Resolution, bool) {
	rest = strings.TrimSpace(cutPrefixFold(rest, "extension "))
	name, args := splitWord(rest)
	if name == "" {
		return Resolution{}, false
	}
	args = strings.TrimSpace(args)
	if r, ok := cutPrefixWord(args, "with"); ok {
		args = strings.TrimSpace(r)
	}
	m := map[string]string{"name": name}
	understood := fmt.Sprintf("Call the extension tool %s.", name)
	if args != "" {
		if !strings.HasPrefix(args, "{") {
			return notUnderstood(`give an extension tool's arguments as JSON, such as call web_search {"query":"weather"}`), true
		}
		m["arguments"] = args
		understood = fmt.Sprintf("Call the extension tool %s with %s.", name, args)
	}
	return call(CallExtension, m, understood), true
}

// splitWord splits off the first word.
func splitWord(s string) (word, rest string) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i:])
}

// cutPrefixWord removes the word (or words) w from the start of s, ignoring case, when it is
// followed by a space or the end.
func cutPrefixWord(s, w string) (string, bool) {
	if len(s) < len(w) || !strings.EqualFold(s[:len(w)], w) {
		return s, false
	}
	rest := s[len(w):]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return s, false
	}
	return strings.TrimSpace(rest), true
}

func cutPrefixFold(s, p string) string {
	if len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) {
		return s[len(p):]
	}
	return s
}

func indexFold(s, sub string) int { return strings.Index(strings.ToLower(s), strings.ToLower(sub)) }

func lastIndexFold(s, sub string) int {
	return strings.LastIndex(strings.ToLower(s), strings.ToLower(sub))
}

// cutFold is strings.Cut ignoring the case of sep (which is ASCII).
func cutFold(s, sep string) (before, after string, found bool) {
	if i := indexFold(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// quotes are the pairs a name or text may be quoted with.
var quotes = [][2]string{{`"`, `"`}, {`'`, `'`}, {"“", "”"}, {"‘", "’"}, {"`", "`"}}

// leadingQuoted reads a quoted text at the start of s and returns it and what follows.
func leadingQuoted(s string) (text, rest string, ok bool) {
	for _, q := range quotes {
		if strings.HasPrefix(s, q[0]) {
			body := s[len(q[0]):]
			if end := strings.Index(body, q[1]); end >= 0 {
				return body[:end], body[end+len(q[1]):], true
			}
		}
	}
	return "", s, false
}

func quoted(s string) bool {
	t, rest, ok := leadingQuoted(s)
	return ok && t != "" && strings.TrimSpace(rest) == ""
}

// unquote removes one pair of quotes around the whole of s.
func unquote(s string) string {
	s = strings.TrimSpace(s)
	if t, rest, ok := leadingQuoted(s); ok && strings.TrimSpace(rest) == "" {
		return t
	}
	return s
}

// looksLikeFile reports a name with a folder or an extension (notes.md, docs/plan).
func looksLikeFile(s string) bool {
	if strings.Contains(s, "/") {
		return true
	}
	i := strings.LastIndexByte(s, '.')
	if i <= 0 || i == len(s)-1 || len(s)-i > 11 {
		return false
	}
	for _, r := range s[i+1:] {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return false
		}
	}
	return !strings.ContainsAny(s, " \t")
}

// countOf says n of a thing in words, its noun in the plural but for one: "1 byte", "0 bytes",
// "12 bytes".
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
