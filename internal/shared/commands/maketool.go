package commands

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// makeTool and its forms read the original Voicebox's plain-language tool proposal, "create a tool
// called NAME that ...", into a descriptor the resolver stages with propose_extension. It is data,
// never code, and nothing in it runs until a person admits it.
var (
	makeTool     = regexp.MustCompile(`^create a tool called ([a-z0-9_-]+) that (.+)$`)
	makeToolTime = regexp.MustCompile(`tells? (?:me )?the (?:time|date|time and date)|what time`)
	makeToolList = regexp.MustCompile(`lists? (?:the )?files`)
	makeToolRead = regexp.MustCompile(`reads? ([\w./-]+)`)
	makeToolWrit = regexp.MustCompile(`writes? ([\w./-]+)(?: with (.*))?`)
	makeToolGet  = regexp.MustCompile(`gets? (https?://[^\s,;]+)`)
)

// makeToolMaxBytes is the write bound of a proposed file-writing tool, as the original proposes.
const makeToolMaxBytes = 65536

// makeToolRequests is the request budget of a proposed fetching tool, as the original proposes.
const makeToolRequests = 5

// resolveMakeTool stages a tool proposal from "create a tool called NAME that ...": tells the time
// (now), lists files (list-files), reads PATH (read-file), writes PATH [with TEXT] (write-file) or
// gets URL (http-get). The descriptor has the original's shape: id NAME-tool, the transcript as its
// description, source "model", runsIn "host".
func resolveMakeTool(transcript string) (Resolution, bool) {
	text := strings.TrimRight(strings.TrimSpace(transcript), ".!?")
	m := makeTool.FindStringSubmatch(strings.ToLower(text))
	if m == nil {
		return Resolution{}, false
	}
	name, rest := m[1], m[2]
	type tool struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Primitive   string          `json:"primitive"`
		Params      json.RawMessage `json:"params,omitempty"`
	}
	d := struct {
		ID           string         `json:"id"`
		Name         string         `json:"name"`
		Description  string         `json:"description"`
		Source       string         `json:"source"`
		RunsIn       string         `json:"runsIn"`
		Capabilities []string       `json:"capabilities"`
		Bounds       map[string]any `json:"bounds"`
		Tools        []tool         `json:"tools"`
	}{ID: name + "-tool", Name: name, Description: text, Source: "model", RunsIn: "host", Capabilities: []string{}, Bounds: map[string]any{}}
	t := tool{Name: name, Description: text}
	params := func(kv ...string) json.RawMessage {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		b, _ := json.Marshal(m)
		return b
	}
	var what string
	switch {
	case makeToolTime.MatchString(rest):
		t.Primitive, what = "now", "tells the time" // now consumes no capability

	case makeToolList.MatchString(rest):
		t.Primitive, d.Capabilities, what = "list-files", []string{"read"}, "lists the files"
	case makeToolRead.MatchString(rest):
		p := makeToolRead.FindStringSubmatch(rest)[1]
		t.Primitive, d.Capabilities, t.Params, what = "read-file", []string{"read"}, params("path", p), "reads "+p
	case makeToolWrit.MatchString(rest):
		w := makeToolWrit.FindStringSubmatch(rest)
		t.Primitive, d.Capabilities, what = "write-file", []string{"write"}, "writes "+w[1]
		t.Params = params("path", w[1], "content", strings.Trim(w[2], `"`))
		d.Bounds["maxBytes"] = makeToolMaxBytes
	case makeToolGet.MatchString(rest):
		u := makeToolGet.FindStringSubmatch(rest)[1]
		parsed, err := url.Parse(u)
		if err != nil || parsed.Hostname() == "" {
			return notUnderstood(fmt.Sprintf("%q is not an address a tool can fetch", clip(u))), true
		}
		t.Primitive, d.Capabilities, t.Params, what = "http-get", []string{"network"}, params("url", u), "fetches "+u
		d.Bounds["hosts"], d.Bounds["maxRequests"] = []string{parsed.Hostname()}, makeToolRequests
	default:
		return notUnderstood(fmt.Sprintf("I make tools that tell the time, list files, read PATH, write PATH with TEXT or get URL, not %q", clip(rest))), true
	}
	d.Tools = []tool{t}
	raw, _ := json.Marshal(d)
	return call(ProposeExtension, map[string]string{"descriptor": string(raw)},
		fmt.Sprintf("Propose a tool %s that %s; a person must admit it before it runs.", name, what)), true
}
