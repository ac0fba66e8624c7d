package commands

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
)

// The kinds of tools the index holds. The original Voicebox also indexes WASM shelf modules,
// system programs, project scripts and agent harnesses; this relay runs none of those.
const (
	KindNative    = "native"
	KindExtension = "extension"
	KindMiniApp   = "mini-app"
)

// Bounds of search_tools.
const (
	// DefaultSearchLimit is how many matches search_tools returns when no limit is given.
	DefaultSearchLimit = 25
	// MaxSearchLimit is the largest limit search_tools takes (its schema says so).
	MaxSearchLimit = 100
)

// IndexEntry is one tool of the unified index list_tools and search_tools answer from, in the
// original's shape: what it is, whether it can run now, and the call that runs it.
type IndexEntry struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Kind        string          `json:"kind"`
	Category    string          `json:"category"`
	Status      string          `json:"status"`
	Description string          `json:"description"`
	Invocation  Invocation      `json:"invocation"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Invocation is the call that runs an indexed tool.
type Invocation struct {
	Tool string            `json:"tool"`
	Args map[string]string `json:"args,omitempty"`
}

// Index returns the set's tools as index entries (built-ins as native, the open mini-apps' tools
// as mini-app), followed by extra (the relay adds the extensions).
func (s *Set) Index(extra []IndexEntry) []IndexEntry {
	out := make([]IndexEntry, 0, len(s.tools)+len(extra))
	for _, t := range s.tools {
		e := IndexEntry{Name: t.Name, Status: "ready", Description: t.Description, Invocation: Invocation{Tool: t.Name}, Parameters: t.Parameters}
		if t.Builtin {
			e.ID, e.Kind, e.Category = "native:"+t.Name, KindNative, nativeCategory(t.Name)
		} else {
			e.ID, e.Kind, e.Category = "mini-app:"+t.Name, KindMiniApp, KindMiniApp
		}
		out = append(out, e)
	}
	return append(out, extra...)
}

func nativeCategory(name string) string {
	switch name {
	case ReadFile, WriteFile, ListFiles, DeleteFile, EditFile, DiffFile, GrepFiles, UndoLastAction, RedoLastAction:
		return "files"
	case ListTools, SearchTools:
		return "tools"
	}
	switch {
	case strings.Contains(name, "extension"):
		return "extensions"
	case strings.Contains(name, "mini_app"):
		return KindMiniApp
	}
	return "system"
}

// ToolList is list_tools' observation, and search_tools' with Query set.
type ToolList struct {
	Query      *string        `json:"query,omitempty"`
	Count      int            `json:"count"`
	TotalCount int            `json:"totalCount,omitempty"`
	Counts     map[string]int `json:"counts"`
	Tools      []IndexEntry   `json:"tools"`
}

// ListIndex answers list_tools: every entry, or those of kind (matched ignoring case, "mini_app"
// as "mini-app"), with counts by kind over the whole index.
func ListIndex(entries []IndexEntry, kind string) ToolList {
	counts := map[string]int{KindNative: 0, KindExtension: 0, KindMiniApp: 0}
	for _, e := range entries {
		counts[e.Kind]++
	}
	tools := filterKind(entries, kind)
	return ToolList{Count: len(tools), TotalCount: len(entries), Counts: counts, Tools: tools}
}

func filterKind(entries []IndexEntry, kind string) []IndexEntry {
	kind = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(kind)), "_", "-")
	out := []IndexEntry{}
	for _, e := range entries {
		if kind == "" || e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// querySynonyms widen a search word as the original's index does, for the words whose tools this
// relay has.
var querySynonyms = map[string][]string{
	"search": {"grep_files", "search_tools", "web-search", "web_search"},
	"find":   {"grep_files", "search_tools"},
	"hash":   {"hash", "sha256", "digest", "wasm"},
	"sha256": {"hash", "digest", "wasm"},
	"wasm":   {"wasm", "hash", "diff"},
	"time":   {"now", "clock"},
	"clock":  {"now", "time"},
	"app":    {"mini-app", "launch_mini_app", "list_mini_apps"},
}

// SearchIndex answers search_tools: the entries of kind that match query, best first, scored as
// the original's index scores them (the whole query against name, kind, category and
// description, then each word of it and its synonyms; a tool that can run now wins a tie), at most
// limit of them (DefaultSearchLimit when limit is 0). Counts are by kind over the matches.
func SearchIndex(entries []IndexEntry, query, kind string, limit int) ToolList {
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	limit = min(limit, MaxSearchLimit)
	q := strings.ToLower(strings.TrimSpace(query))
	tokens := strings.FieldsFunc(q, func(r rune) bool { return strings.ContainsRune(" \t\n,._/-", r) })
	words := slices.Clone(tokens)
	for _, tok := range tokens {
		words = append(words, querySynonyms[tok]...)
	}
	slices.Sort(words)
	words = slices.Compact(words)
	type scored struct {
		e     IndexEntry
		score int
	}
	var matches []scored
	for _, e := range filterKind(entries, kind) {
		if q == "" {
			matches = append(matches, scored{e, 0})
			continue
		}
		if s := score(e, q, words); s > 0 {
			matches = append(matches, scored{e, s})
		}
	}
	slices.SortStableFunc(matches, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return strings.Compare(a.e.Name, b.e.Name)
	})
	out := ToolList{Query: &query, Counts: map[string]int{}, Tools: []IndexEntry{}}
	for _, m := range matches {
		out.Counts[m.e.Kind]++
	}
	out.Count = len(matches)
	for _, m := range matches[:min(len(matches), limit)] {
		out.Tools = append(out.Tools, m.e)
	}
	return out
}

func score(e IndexEntry, q string, words []string) int {
	name, id := strings.ToLower(e.Name), strings.ToLower(e.ID)
	kind, cat, desc := strings.ToLower(e.Kind), strings.ToLower(e.Category), strings.ToLower(e.Description)
	s := 0
	switch {
	case name == q || id == q:
		s += 120
	case strings.HasPrefix(name, q):
		s += 75
	case strings.Contains(name, q):
		s += 50
	}
	if cat == q || kind == q {
		s += 60
	}
	if strings.Contains(desc, q) {
		s += 35
	}
	parts := strings.FieldsFunc(name, func(r rune) bool { return strings.ContainsRune(" _:/-", r) })
	for _, w := range words {
		switch {
		case name == w || strings.HasSuffix(id, ":"+w):
			s += 100
		case strings.HasPrefix(name, w):
			s += 60
		case slices.Contains(parts, w):
			s += 45
		}
		if cat == w || kind == w || strings.Contains(cat, w) {
			s += 40
		}
		if strings.Contains(desc, w) {
			s += 20
		}
	}
	if s > 0 && (e.Status == "ready" || e.Status == "admitted") {
		s += 2
	}
	return s
}
