// Package externalapps is the relay's side of external mini-apps: web apps deployed at their own
// origin that the page embeds in an <iframe src> and talks to over postMessage (see
// public/external-apps.js and public/mini-app-guest.js).
//
// The relay holds the one registry of such apps (MINI_APPS, JSON, or a file), serves it to the
// page with the signing secrets stripped (GET /mini-apps), and mints short-lived identity tokens
// for apps that declared the auth capability (POST /mini-apps/{appId}/token). Onboarding an app
// is an entry in that registry, never a code change.
//
// The registry is deployment configuration: an entry carries a signing secret and an origin the
// page's Content-Security-Policy will allow to be framed, so it is read once at start, and a
// malformed entry stops the relay with a message naming the entry and the field.
package externalapps

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/voicebox-go/voicebox/internal/shared/names"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
)

// Bounds and vocabularies of a registry entry.
const (
	// MaxNameChars bounds an app's display name.
	MaxNameChars = 80
	// MaxDescriptionChars bounds the operator's description, which rides in the stable part of
	// the model's system instruction.
	MaxDescriptionChars = 600
	// MinSecretBytes is the shortest signing secret accepted: HS256 wants a key at least as long
	// as its 256-bit output.
	MinSecretBytes = 32
	// MaxApps bounds how many apps one registry holds.
	MaxApps = 32
)

// CapabilityAuth is the capability an app declares to be given identity tokens.
const CapabilityAuth = "auth"

// The protocols an external app may speak (an entry's protocol field). They differ only in how
// the page reads and writes an envelope (public/external-apps.js has one adapter for each): the
// same host, walls, clamps, deadlines, origin pins and approvals serve all three.
const (
	// ProtocolVoicebox is ours, the default: JSON-RPC 2.0 stamped "protocol": "voicebox-mini-app/1"
	// (public/mini-app-guest.js).
	ProtocolVoicebox = "voicebox"
	// ProtocolThunderbolt is Thunderbolt's guest SDK: JSON-RPC 2.0 stamped
	// "protocol": "thunderbolt-miniapp", protocol version 3 handshake, context and result shapes.
	ProtocolThunderbolt = "thunderbolt"
	// ProtocolJSONRPC is plain JSON-RPC 2.0 with no marker and the MCP Apps method names.
	ProtocolJSONRPC = "jsonrpc"
)

// Protocols lists the values of an entry's protocol field.
var Protocols = []string{ProtocolVoicebox, ProtocolThunderbolt, ProtocolJSONRPC}

// Icons is the allowlist an entry's icon is chosen from; the page draws each as a glyph of its own.
var Icons = []string{"app", "calendar", "cart", "chart", "chat", "document", "folder", "mail", "map", "table", "users"}

// appID is an app id: a lowercase letter, then up to 23 lowercase letters, digits and dashes. It
// becomes part of the names the model sees (see internal/shared/externalapp.ModelName).
var appID = regexp.MustCompile(`^[a-z][a-z0-9-]{0,23}$`)

// App is one registry entry. Secret is never served to the page.
type App struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	Description  string   `json:"description,omitempty"`
	URL          string   `json:"url"`
	Origin       string   `json:"origin"`
	Icon         string   `json:"icon"`
	Capabilities []string `json:"capabilities"`
	// Protocol is how the app's messages are written: one of Protocols (ProtocolVoicebox when
	// the entry says nothing).
	Protocol string `json:"protocol"`
	Audience string `json:"audience,omitempty"`
	Secret   string `json:"-"`
}

// HasAuth reports whether the app declared the auth capability.
func (a App) HasAuth() bool { return slices.Contains(a.Capabilities, CapabilityAuth) }

// Registry is the parsed, checked set of apps. It is immutable after Parse.
type Registry struct {
	apps map[string]App
	ids  []string // sorted
}

// Empty is a registry with no apps.
func Empty() *Registry { return &Registry{apps: map[string]App{}} }

// entry is an entry as written; every field is optional in the JSON so that a missing one is
// named by the check rather than by the decoder.
type entry struct {
	Name         *string   `json:"name"`
	Description  *string   `json:"description"`
	URL          *string   `json:"url"`
	Origin       *string   `json:"origin"`
	Icon         *string   `json:"icon"`
	Capabilities *[]string `json:"capabilities"`
	Protocol     *string   `json:"protocol"`
	Audience     *string   `json:"audience"`
	Secret       *string   `json:"secret"`
}

// FieldError names the entry and the field a registry was refused for.
type FieldError struct {
	App, Field, Problem string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("entry %q: %s", e.App, e.Problem)
	}
	return fmt.Sprintf("entry %q: field %q: %s", e.App, e.Field, e.Problem)
}

// Parse reads a registry: one JSON object keyed by app id, each value an object with name, url,
// origin (required), description, icon (from Icons, default "app"), capabilities (a list; only
// "auth" exists), protocol (from Protocols, default "voicebox"), and, for an app with the auth capability, audience and secret (required,
// the secret at least MinSecretBytes and used by no other app). The origin is the app's own
// declaration and is never derived from url: a redirect may move url, while the origin is what
// every message from the app is checked against. Unknown fields, repeated ids and anything else
// out of shape are refused with a *FieldError (or a plain error for the document as a whole).
func Parse(raw []byte) (*Registry, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return Empty(), nil
	}
	ids, err := topLevelKeys(raw)
	if err != nil {
		return nil, err
	}
	if len(ids) > MaxApps {
		return nil, fmt.Errorf("%d apps are registered; at most %d may be", len(ids), MaxApps)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("not a JSON object keyed by app id: %v", err)
	}
	reg := &Registry{apps: map[string]App{}}
	sort.Strings(ids)
	secrets := map[string]string{}
	for _, id := range ids {
		a, err := parseEntry(id, doc[id])
		if err != nil {
			return nil, err
		}
		if a.Secret != "" {
			if other, ok := secrets[a.Secret]; ok {
				return nil, &FieldError{id, "secret", fmt.Sprintf("is the same as entry %q's; each app needs its own, or one app could forge the other's tokens", other)}
			}
			secrets[a.Secret] = id
		}
		reg.apps[id] = a
		reg.ids = append(reg.ids, id)
	}
	return reg, nil
}

func parseEntry(id string, raw json.RawMessage) (App, error) {
	fail := func(field, format string, args ...any) (App, error) {
		return App{}, &FieldError{id, field, fmt.Sprintf(format, args...)}
	}
	if !appID.MatchString(id) {
		return fail("", "the app id must be a lowercase letter followed by up to 23 lowercase letters, digits and dashes")
	}
	var e entry
	if err := strictjson.Decode(raw, &e); err != nil {
		se, _ := errors.AsType[*strictjson.Error](err)
		switch {
		case se.Kind == strictjson.UnknownField:
			return fail(se.Field, "is not a field of an entry (name, description, url, origin, icon, capabilities, protocol, audience, secret)")
		case se.Kind == strictjson.WrongType && se.Field != "":
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return fail(se.Field, "has the wrong type (%s where %s was expected)", te.Value, te.Type)
			}
		}
		return fail("", "is not a JSON object: %s", strictjson.Problem(err))
	}
	a := App{ID: id, Icon: "app", Capabilities: []string{}, Protocol: ProtocolVoicebox}
	if e.Name == nil || strings.TrimSpace(*e.Name) == "" {
		return fail("name", "is required")
	}
	if n := len([]rune(*e.Name)); n > MaxNameChars {
		return fail("name", "is %d characters; at most %d", n, MaxNameChars)
	}
	a.Name = strings.TrimSpace(*e.Name)
	if r := names.Check("the name", a.Name); r != nil {
		return fail("name", "%s", r.Why)
	}
	if e.Description != nil {
		if n := len([]rune(*e.Description)); n > MaxDescriptionChars {
			return fail("description", "is %d characters; at most %d (it is part of every system instruction)", n, MaxDescriptionChars)
		}
		a.Description = strings.TrimSpace(*e.Description)
	}
	if e.URL == nil {
		return fail("url", "is required")
	}
	u, err := url.Parse(*e.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return fail("url", "%q is not an absolute http or https address", *e.URL)
	}
	a.URL = u.String()
	if e.Origin == nil {
		return fail("origin", "is required; declare it separately from url (it is never derived from url)")
	}
	origin, err := parseOrigin(*e.Origin)
	if err != nil {
		return fail("origin", "%v", err)
	}
	a.Origin = origin
	if e.Icon != nil {
		if !slices.Contains(Icons, *e.Icon) {
			return fail("icon", "%q is not one of %s", *e.Icon, strings.Join(Icons, ", "))
		}
		a.Icon = *e.Icon
	}
	if e.Capabilities != nil {
		for _, c := range *e.Capabilities {
			if c != CapabilityAuth {
				return fail("capabilities", "%q is not a capability (the only one is %q)", c, CapabilityAuth)
			}
			if !slices.Contains(a.Capabilities, c) {
				a.Capabilities = append(a.Capabilities, c)
			}
		}
	}
	if e.Protocol != nil {
		if !slices.Contains(Protocols, *e.Protocol) {
			return fail("protocol", "%q is not one of %s", *e.Protocol, strings.Join(Protocols, ", "))
		}
		a.Protocol = *e.Protocol
	}
	if e.Audience != nil {
		a.Audience = strings.TrimSpace(*e.Audience)
	}
	if e.Secret != nil {
		a.Secret = *e.Secret
	}
	if a.HasAuth() {
		if a.Audience == "" {
			return fail("audience", "is required for an app with the auth capability: its tokens are minted for this audience")
		}
		if len(a.Secret) < MinSecretBytes {
			return fail("secret", "is %d bytes; an app with the auth capability needs a signing secret of at least %d", len(a.Secret), MinSecretBytes)
		}
	} else if a.Secret != "" || a.Audience != "" {
		field := "secret"
		if a.Secret == "" {
			field = "audience"
		}
		return fail(field, "is set, but the app does not declare the auth capability; add \"auth\" to capabilities or remove it")
	}
	return a, nil
}

// parseOrigin checks an origin as browsers spell it in MessageEvent.origin: http or https, a
// lowercase host, a port only when it is not the scheme's default, and nothing else.
func parseOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "#") {
		return "", fmt.Errorf("%q is not scheme://host[:port] (http or https, no path, not even a trailing slash)", s)
	}
	host := strings.ToLower(u.Host)
	// The origin goes into the page's frame-src as written, so it may hold only what a browser's
	// origin holds: no wildcard, quote or semicolon to widen or end the directive.
	if !plainHost(strings.ToLower(u.Hostname())) || !plainPort(host, u.Port()) {
		return "", fmt.Errorf("%q is not scheme://host[:port] with a DNS name or IP address and a port number", s)
	}
	if (u.Scheme == "http" && strings.HasSuffix(host, ":80")) || (u.Scheme == "https" && strings.HasSuffix(host, ":443")) {
		return "", fmt.Errorf("%q names the scheme's default port, which browsers leave out of an origin; drop it", s)
	}
	return u.Scheme + "://" + host, nil
}

// plainHost reports whether h is an IP address or a DNS name of letters, digits, dashes and dots.
func plainHost(h string) bool {
	if net.ParseIP(h) != nil {
		return true
	}
	if h == "" || len(h) > 253 {
		return false
	}
	for _, c := range h {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// plainPort reports whether hostport (the URL's host) ends in no port, or in port, 1 to 65535.
func plainPort(hostport, port string) bool {
	if port == "" {
		return !strings.HasSuffix(hostport, ":")
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= 1 && n <= 65535 && strconv.Itoa(n) == port
}

// topLevelKeys returns the keys of a JSON object, refusing a repeated key (encoding/json would keep
// the last one silently).
func topLevelKeys(raw []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object keyed by app id")
	}
	seen := map[string]bool{}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("not a JSON object keyed by app id: %v", err)
		}
		k := t.(string)
		if seen[k] {
			return nil, &FieldError{k, "", "the app id appears twice"}
		}
		seen[k] = true
		keys = append(keys, k)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, fmt.Errorf("entry %q: not JSON: %v", k, err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("not a JSON object keyed by app id: %v", err)
	}
	if len(bytes.TrimSpace(raw[dec.InputOffset():])) != 0 {
		return nil, errors.New("trailing data after the registry object")
	}
	return keys, nil
}

// Get returns the app registered under id.
func (r *Registry) Get(id string) (App, bool) {
	a, ok := r.apps[id]
	return a, ok
}

// Apps returns every app, ordered by id.
func (r *Registry) Apps() []App {
	out := make([]App, 0, len(r.ids))
	for _, id := range r.ids {
		out = append(out, r.apps[id])
	}
	return out
}

// Origins returns the distinct declared origins, sorted: what the page's frame-src allows.
func (r *Registry) Origins() []string {
	var out []string
	for _, a := range r.apps {
		if !slices.Contains(out, a.Origin) {
			out = append(out, a.Origin)
		}
	}
	sort.Strings(out)
	return out
}
