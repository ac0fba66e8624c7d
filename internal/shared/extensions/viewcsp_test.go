package extensions

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

func TestViewPolicyKeepsOnlyTheDeclaredHosts(t *testing.T) {
	t.Parallel()
	hosts := []string{"127.0.0.1:4100", "api.example.com", "Cdn.Example.com:8443"}
	cases := []struct {
		name   string
		field  string
		domain string
		want   string       // the granted origin, or ""
		rule   refusal.Rule // the drop's rule when want is ""
	}{
		{"loopback host with its port", "connectDomains", "http://127.0.0.1:4100", "http://127.0.0.1:4100", ""},
		{"the same host on another port", "connectDomains", "http://127.0.0.1:4101", "", refusal.ViewDomainOutsideHosts},
		{"a host named without a port allows any port", "connectDomains", "https://api.example.com:9000", "https://api.example.com:9000", ""},
		{"websocket", "connectDomains", "wss://api.example.com", "wss://api.example.com", ""},
		{"upper case is canonicalised", "resourceDomains", "HTTPS://API.EXAMPLE.COM/", "https://api.example.com", ""},
		{"a host named in mixed case in the bounds", "resourceDomains", "https://cdn.example.com:8443", "https://cdn.example.com:8443", ""},
		{"websocket is not a resource", "resourceDomains", "wss://api.example.com", "", refusal.ViewDomainMalformed},
		{"another host", "connectDomains", "https://evil.example", "", refusal.ViewDomainOutsideHosts},
		{"a sibling of a declared host", "connectDomains", "https://x.api.example.com", "", refusal.ViewDomainOutsideHosts},
		{"star", "connectDomains", "*", "", refusal.ViewDomainWildcard},
		{"wildcard subdomain", "resourceDomains", "https://*.example.com", "", refusal.ViewDomainWildcard},
		{"data scheme", "resourceDomains", "data:", "", refusal.ViewDomainMalformed},
		{"blob scheme", "resourceDomains", "blob:", "", refusal.ViewDomainMalformed},
		{"javascript scheme", "frameDomains", "javascript:alert(1)", "", refusal.ViewDomainMalformed},
		{"file scheme", "resourceDomains", "file:///etc/passwd", "", refusal.ViewDomainMalformed},
		{"ftp", "connectDomains", "ftp://api.example.com", "", refusal.ViewDomainMalformed},
		{"bare host without a scheme", "connectDomains", "api.example.com", "", refusal.ViewDomainMalformed},
		{"scheme-relative", "connectDomains", "//api.example.com", "", refusal.ViewDomainMalformed},
		{"keyword self", "connectDomains", "'self'", "", refusal.ViewDomainMalformed},
		{"keyword unsafe-eval", "resourceDomains", "'unsafe-eval'", "", refusal.ViewDomainMalformed},
		{"a host with a path", "connectDomains", "https://api.example.com/v1/", "", refusal.ViewDomainMalformed},
		{"a query", "connectDomains", "https://api.example.com?x=1", "", refusal.ViewDomainMalformed},
		{"a fragment", "connectDomains", "https://api.example.com#x", "", refusal.ViewDomainMalformed},
		{"user info", "connectDomains", "https://a@api.example.com", "", refusal.ViewDomainMalformed},
		{"a second directive smuggled in", "connectDomains", "https://api.example.com; script-src *", "", refusal.ViewDomainMalformed},
		{"two sources in one", "connectDomains", "https://api.example.com https://evil.example", "", refusal.ViewDomainMalformed},
		{"a comma", "connectDomains", "https://api.example.com,https://evil.example", "", refusal.ViewDomainMalformed},
		{"a newline", "connectDomains", "https://api.example.com\nscript-src *", "", refusal.ViewDomainMalformed},
		{"an empty port", "connectDomains", "https://api.example.com:", "", refusal.ViewDomainMalformed},
		{"port zero", "connectDomains", "https://api.example.com:0", "", refusal.ViewDomainMalformed},
		{"port too large", "connectDomains", "https://api.example.com:70000", "", refusal.ViewDomainMalformed},
		{"an IPv6 literal", "connectDomains", "http://[::1]:4100", "", refusal.ViewDomainMalformed},
		{"a unicode host", "connectDomains", "https://äpi.example.com", "", refusal.ViewDomainMalformed},
		{"empty", "connectDomains", "", "", refusal.ViewDomainMalformed},
		{"too long", "connectDomains", "https://" + strings.Repeat("a", MaxViewDomainLength) + ".com", "", refusal.ViewDomainMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var declared ViewCSP
			for _, f := range viewFields {
				if f.name == c.field {
					*f.get(&declared) = []string{c.domain}
				}
			}
			granted, dropped := ViewPolicy(hosts, declared)
			var got []string
			for _, f := range viewFields {
				got = append(got, *f.get(&granted)...)
			}
			if c.want != "" {
				if !slices.Equal(got, []string{c.want}) || len(dropped) != 0 {
					t.Fatalf("granted %v, dropped %+v; want %s granted", got, dropped, c.want)
				}
				return
			}
			if len(got) != 0 || len(dropped) != 1 || dropped[0].Rule != c.rule || dropped[0].Field != c.field || dropped[0].Why == "" {
				t.Fatalf("granted %v, dropped %+v; want one %s drop", got, dropped, c.rule)
			}
		})
	}
}

func TestViewPolicyMapsFieldsToDirectives(t *testing.T) {
	t.Parallel()
	granted, dropped := ViewPolicy([]string{"a.example", "b.example"}, ViewCSP{
		ConnectDomains:  []string{"https://a.example", "https://a.example", "https://evil.example"},
		ResourceDomains: []string{"https://b.example"},
		FrameDomains:    []string{"https://b.example"},
	})
	if len(dropped) != 1 || dropped[0].Domain != "https://evil.example" {
		t.Fatalf("dropped %+v", dropped)
	}
	d := granted.Directives()
	if !slices.Equal(d["connect-src"], []string{"https://a.example"}) {
		t.Fatalf("connect-src %v: a repeated domain is granted once", d["connect-src"])
	}
	for _, name := range []string{"img-src", "script-src", "style-src", "font-src", "media-src", "frame-src"} {
		if !slices.Equal(d[name], []string{"https://b.example"}) {
			t.Fatalf("%s %v", name, d[name])
		}
	}
	if _, ok := d["base-uri"]; ok {
		t.Fatalf("base-uri granted with nothing declared: %v", d)
	}
	for name := range d {
		if !slices.Contains(ViewDirectives, name) {
			t.Fatalf("directive %s is not among ViewDirectives", name)
		}
	}
}

func TestViewPolicyReadsABoundedNumberOfDomains(t *testing.T) {
	t.Parallel()
	var declared ViewCSP
	for i := range 1000 {
		declared.ConnectDomains = append(declared.ConnectDomains, fmt.Sprintf("https://h%d.example", i))
	}
	declared.ResourceDomains = []string{"https://a.example"}
	granted, dropped := ViewPolicy([]string{"a.example", "h1.example", "h999.example"}, declared)
	if !slices.Equal(granted.ConnectDomains, []string{"https://h1.example"}) || len(granted.ResourceDomains) != 0 {
		t.Fatalf("granted %+v: only h1 is within the hosts and within the first %d", granted, MaxViewDomains)
	}
	if len(dropped) != MaxViewDomains {
		t.Fatalf("%d dropped, want %d (%d outside the hosts, one summary)", len(dropped), MaxViewDomains, MaxViewDomains-1)
	}
	last := dropped[len(dropped)-1]
	if last.Rule != refusal.ViewDomainsTooMany || !strings.Contains(last.Why, fmt.Sprint(1001-MaxViewDomains)) {
		t.Fatalf("last drop %+v", last)
	}
}

func FuzzViewPolicy(f *testing.F) {
	for _, s := range []string{"https://a.example", "*", "data:", "https://a.example/x", "http://127.0.0.1:1", "HTTPS://A.EXAMPLE:443", "wss://a.example;x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, d string) {
		granted, dropped := ViewPolicy([]string{"a.example", "127.0.0.1:1"}, ViewCSP{ConnectDomains: []string{d}, ResourceDomains: []string{d}})
		if len(granted.ConnectDomains)+len(dropped) < 1 {
			t.Fatalf("%q neither granted nor dropped", d)
		}
		for _, srcs := range granted.Directives() {
			for _, s := range srcs {
				if s != "http://127.0.0.1:1" && !strings.HasSuffix(strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(s, "https://"), "http://"), "wss://"), "ws://"), "a.example") &&
					!strings.Contains(s, "a.example:") {
					t.Fatalf("%q granted %q, outside the hosts", d, s)
				}
				if strings.ContainsAny(s, " ;,'*\"\n/?#@") && !strings.Contains(s, "://") {
					t.Fatalf("%q granted %q", d, s)
				}
				if strings.ContainsAny(strings.SplitN(s, "://", 2)[1], " ;,'*\"\n/?#@") {
					t.Fatalf("%q granted %q, not a plain origin", d, s)
				}
			}
		}
	})
}

func TestDeclaredViewCSPReadsOnlyListsOfStrings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		meta    map[string]any
		want    ViewCSP
		dropped int
	}{
		{"none", nil, ViewCSP{}, 0},
		{"no csp", map[string]any{"ui": map[string]any{"prefersBorder": true}}, ViewCSP{}, 0},
		{"csp not an object", map[string]any{"ui": map[string]any{"csp": "connect-src *"}}, ViewCSP{}, 1},
		{"lists", map[string]any{"ui": map[string]any{"csp": map[string]any{
			"connectDomains": []any{"https://a.example"}, "resourceDomains": []any{"https://b.example", 7.0}, "frameDomains": "https://c.example", "other": []any{"x"}}}},
			ViewCSP{ConnectDomains: []string{"https://a.example"}, ResourceDomains: []string{"https://b.example"}}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, dropped := DeclaredViewCSP(c.meta)
			if fmt.Sprint(got) != fmt.Sprint(c.want) || len(dropped) != c.dropped {
				t.Fatalf("got %+v, dropped %+v", got, dropped)
			}
			for _, d := range dropped {
				if d.Rule != refusal.ViewDomainMalformed {
					t.Fatalf("dropped %+v", d)
				}
			}
		})
	}
}
