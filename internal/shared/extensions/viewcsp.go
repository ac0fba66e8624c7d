package extensions

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// An MCP Apps view may declare, in its resource's _meta.ui.csp, the origins it needs (ViewCSP).
// Voicebox gives it those origins only where the extension's bounds.hosts already let it go: the
// intersection, never more. Every other declared domain is dropped with a named reason
// (DroppedDomain), and a view that declares nothing, or nothing allowed, keeps the default:
// connect-src 'none' and no remote resources.
const (
	// MaxViewDomains bounds how many declared domains (all fields together) ViewPolicy reads;
	// the rest are dropped with one view-domains-too-many entry.
	MaxViewDomains = 64
	// MaxViewDomainLength bounds one declared domain, in bytes; a longer one is malformed.
	MaxViewDomainLength = 300
)

// ViewCSP is an MCP Apps view's CSP domains, as its resource declares them (_meta.ui.csp, the
// ext-apps McpUiResourceCsp) or as Voicebox grants them (ViewPolicy's first result).
type ViewCSP struct {
	// ConnectDomains are origins for fetch, XHR and WebSocket (connect-src).
	ConnectDomains []string `json:"connectDomains,omitempty"`
	// ResourceDomains are origins for images, scripts, styles, fonts and media.
	ResourceDomains []string `json:"resourceDomains,omitempty"`
	// FrameDomains are origins for nested frames (frame-src).
	FrameDomains []string `json:"frameDomains,omitempty"`
	// BaseURIDomains are origins a <base> may name (base-uri).
	BaseURIDomains []string `json:"baseUriDomains,omitempty"`
}

// DroppedDomain is a declared domain a view is not given: the field it was in, the domain
// (clipped), and why, as a refusal's rule and sentence.
type DroppedDomain struct {
	Field  string       `json:"field"`
	Domain string       `json:"domain"`
	Rule   refusal.Rule `json:"refused"`
	Why    string       `json:"why"`
}

// viewField is one field of ViewCSP: its JSON name, the schemes it may name and the CSP
// directives it maps to.
type viewField struct {
	name       string
	schemes    []string
	directives []string
	get        func(*ViewCSP) *[]string
}

var viewFields = []viewField{
	{"connectDomains", []string{"http", "https", "ws", "wss"}, []string{"connect-src"}, func(c *ViewCSP) *[]string { return &c.ConnectDomains }},
	{"resourceDomains", []string{"http", "https"}, []string{"img-src", "script-src", "style-src", "font-src", "media-src"}, func(c *ViewCSP) *[]string { return &c.ResourceDomains }},
	{"frameDomains", []string{"http", "https"}, []string{"frame-src"}, func(c *ViewCSP) *[]string { return &c.FrameDomains }},
	{"baseUriDomains", []string{"http", "https"}, []string{"base-uri"}, func(c *ViewCSP) *[]string { return &c.BaseURIDomains }},
}

// ViewDirectives are the CSP directives a view's grant may add sources to, and nothing else.
var ViewDirectives = []string{"connect-src", "img-src", "script-src", "style-src", "font-src", "media-src", "frame-src", "base-uri"}

// ViewPolicy returns what of declared a view of an extension whose bounds.hosts are hosts is
// given: each domain that is an origin (scheme://host[:port], no path, query, user or wildcard)
// of a scheme its field allows, on a host that hosts names (by host:port or by name, as the
// mediated fetch matches), in canonical lower-case form and once. Everything else is in dropped,
// in the order declared, at most MaxViewDomains+1 entries.
func ViewPolicy(hosts []string, declared ViewCSP) (granted ViewCSP, dropped []DroppedDomain) {
	allowed := make([]string, len(hosts))
	for i, h := range hosts {
		allowed[i] = strings.ToLower(h)
	}
	total, read := 0, 0
	for _, f := range viewFields {
		total += len(*f.get(&declared))
	}
	for _, f := range viewFields {
		out := f.get(&granted)
		for _, d := range *f.get(&declared) {
			if read == MaxViewDomains {
				left := total - read
				dropped = append(dropped, DroppedDomain{Field: f.name, Domain: clipDomain(d), Rule: refusal.ViewDomainsTooMany,
					Why: fmt.Sprintf("a view may declare at most %d domains; the %d from here on were not read", MaxViewDomains, left)})
				return granted, dropped
			}
			read++
			origin, r := viewOrigin(d, f.schemes, allowed)
			if r != nil {
				dropped = append(dropped, DroppedDomain{Field: f.name, Domain: clipDomain(d), Rule: r.Rule, Why: r.Why})
				continue
			}
			if !slices.Contains(*out, origin) {
				*out = append(*out, origin)
			}
		}
	}
	return granted, dropped
}

// Directives maps a granted ViewCSP to the sources each CSP directive gains (only ViewDirectives,
// only non-empty ones).
func (c ViewCSP) Directives() map[string][]string {
	out := map[string][]string{}
	for _, f := range viewFields {
		for _, src := range *f.get(&c) {
			for _, d := range f.directives {
				if !slices.Contains(out[d], src) {
					out[d] = append(out[d], src)
				}
			}
		}
	}
	return out
}

// viewOrigin checks one declared domain: it returns its canonical origin, or why it is dropped.
func viewOrigin(d string, schemes, hosts []string) (string, *refusal.Refusal) {
	if len(d) > MaxViewDomainLength {
		return "", refusal.New(refusal.ViewDomainMalformed, "a domain is at most %d bytes", MaxViewDomainLength)
	}
	for _, c := range d {
		if c <= ' ' || c >= 0x7f || strings.ContainsRune(`;,'"\`, c) {
			return "", refusal.New(refusal.ViewDomainMalformed, "a domain is an origin such as https://api.example.com, with no spaces, quotes, commas or semicolons")
		}
	}
	if strings.Contains(d, "*") {
		return "", refusal.New(refusal.ViewDomainWildcard, "a wildcard is wider than the exact hosts the extension was admitted with; name each host")
	}
	u, err := url.Parse(d)
	if err != nil || u.Scheme == "" || u.Opaque != "" || u.Host == "" {
		return "", refusal.New(refusal.ViewDomainMalformed, "a domain is an origin such as https://api.example.com (a scheme, ://, a host and an optional port)")
	}
	scheme := strings.ToLower(u.Scheme)
	if !slices.Contains(schemes, scheme) {
		return "", refusal.New(refusal.ViewDomainMalformed, "this field names %s origins only, not %s:", strings.Join(schemes, ", "), clipDomain(scheme))
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(d, "#") {
		return "", refusal.New(refusal.ViewDomainMalformed, "a domain is an origin alone: no user, path, query or fragment")
	}
	name, port := strings.ToLower(u.Hostname()), u.Port()
	if name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789.-") != "" {
		return "", refusal.New(refusal.ViewDomainMalformed, "a domain's host is a name or an IPv4 address of letters, digits, dots and dashes")
	}
	if strings.HasSuffix(u.Host, ":") {
		return "", refusal.New(refusal.ViewDomainMalformed, "a domain's port, when given, is a number")
	}
	host := name
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || len(port) > 5 {
			return "", refusal.New(refusal.ViewDomainMalformed, "a domain's port is from 1 to 65535")
		}
		host = name + ":" + strconv.Itoa(n)
	}
	if !slices.Contains(hosts, host) && !slices.Contains(hosts, name) {
		return "", refusal.New(refusal.ViewDomainOutsideHosts, "%s is not among the hosts the extension was admitted to reach (bounds.hosts)", host)
	}
	return scheme + "://" + host, nil
}

// clipDomain is d as a drop reports it: valid UTF-8, control characters as "?", at most 120 bytes.
func clipDomain(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	if len(s) > 120 {
		return strings.ToValidUTF8(s[:120], "") + "..."
	}
	return s
}

// DeclaredViewCSP reads a view resource's _meta (a resources/read content item's) for its
// declared CSP domains, _meta.ui.csp. What is there but not a list of strings is in dropped
// (view-domain-malformed), never read as something else; no _meta.ui.csp is an empty ViewCSP.
func DeclaredViewCSP(meta map[string]any) (declared ViewCSP, dropped []DroppedDomain) {
	ui, _ := meta["ui"].(map[string]any)
	csp, ok := ui["csp"].(map[string]any)
	if !ok {
		if ui["csp"] != nil {
			dropped = append(dropped, DroppedDomain{Field: "csp", Rule: refusal.ViewDomainMalformed, Why: "_meta.ui.csp is an object of domain lists; this one is not, so none of it is read"})
		}
		return declared, dropped
	}
	for _, f := range viewFields {
		v, ok := csp[f.name]
		if !ok || v == nil {
			continue
		}
		list, ok := v.([]any)
		if !ok {
			dropped = append(dropped, DroppedDomain{Field: f.name, Rule: refusal.ViewDomainMalformed, Why: f.name + " is a list of origins; this one is not, so none of it is read"})
			continue
		}
		out := f.get(&declared)
		for _, item := range list {
			s, ok := item.(string)
			if !ok {
				dropped = append(dropped, DroppedDomain{Field: f.name, Domain: clipDomain(fmt.Sprint(item)), Rule: refusal.ViewDomainMalformed, Why: "a domain is a string such as https://api.example.com"})
				continue
			}
			*out = append(*out, s)
		}
	}
	return declared, dropped
}
