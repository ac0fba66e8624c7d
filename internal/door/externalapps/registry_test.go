package externalapps

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const secretA = "a-secret-of-at-least-thirty-two-bytes-for-orders"
const secretB = "another-secret-thirty-two-bytes-long-for-crm-app"

func goodRegistry() string {
	return `{
	  "orders": {"name": "Order Book", "description": "Open orders and their status.",
	             "url": "http://127.0.0.1:5190/app/", "origin": "http://127.0.0.1:5190", "icon": "cart",
	             "capabilities": ["auth"], "audience": "orders-app", "secret": "` + secretA + `"},
	  "crm": {"name": "CRM", "url": "https://crm.example.com/start", "origin": "https://crm.example.com",
	          "capabilities": ["auth"], "audience": "crm", "secret": "` + secretB + `"},
	  "wiki": {"name": "Wiki", "url": "https://wiki.example.com/", "origin": "https://wiki.example.com"}
	}`
}

func TestParseReadsAGoodRegistry(t *testing.T) {
	t.Parallel()
	reg, err := Parse([]byte(goodRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	apps := reg.Apps()
	if len(apps) != 3 || apps[0].ID != "crm" || apps[1].ID != "orders" || apps[2].ID != "wiki" {
		t.Fatalf("apps = %+v", apps)
	}
	o, _ := reg.Get("orders")
	if o.Origin != "http://127.0.0.1:5190" || o.URL != "http://127.0.0.1:5190/app/" || o.Icon != "cart" || !o.HasAuth() || o.Audience != "orders-app" {
		t.Fatalf("orders = %+v", o)
	}
	w, _ := reg.Get("wiki")
	if w.Icon != "app" || w.HasAuth() || len(w.Capabilities) != 0 {
		t.Fatalf("wiki = %+v", w)
	}
	if got := strings.Join(reg.Origins(), " "); got != "http://127.0.0.1:5190 https://crm.example.com https://wiki.example.com" {
		t.Fatalf("origins = %s", got)
	}
	// The listing the page gets never carries a secret.
	b, _ := json.Marshal(reg.Apps())
	if strings.Contains(string(b), secretA) || strings.Contains(string(b), "secret") {
		t.Fatalf("the listing carries a secret: %s", b)
	}
}

func TestParseNamesTheEntryAndFieldOfEveryProblem(t *testing.T) {
	t.Parallel()
	ok := `"name": "A", "url": "https://a.example.com/", "origin": "https://a.example.com"`
	auth := `, "capabilities": ["auth"], "audience": "a", "secret": "` + secretA + `"`
	for _, tt := range []struct {
		name, doc, app, field string
	}{
		{"bad id", `{"Orders": {` + ok + `}}`, "Orders", ""},
		{"id with underscore", `{"my_app": {` + ok + `}}`, "my_app", ""},
		{"missing name", `{"a": {"url": "https://a.example.com/", "origin": "https://a.example.com"}}`, "a", "name"},
		{"blank name", `{"a": {"name": "  ", "url": "https://a.example.com/", "origin": "https://a.example.com"}}`, "a", "name"},
		{"long name", `{"a": {"name": "` + strings.Repeat("n", MaxNameChars+1) + `", "url": "https://a.example.com/", "origin": "https://a.example.com"}}`, "a", "name"},
		{"long description", `{"a": {` + ok + `, "description": "` + strings.Repeat("d", MaxDescriptionChars+1) + `"}}`, "a", "description"},
		{"missing url", `{"a": {"name": "A", "origin": "https://a.example.com"}}`, "a", "url"},
		{"relative url", `{"a": {"name": "A", "url": "/app", "origin": "https://a.example.com"}}`, "a", "url"},
		{"ftp url", `{"a": {"name": "A", "url": "ftp://a.example.com/", "origin": "https://a.example.com"}}`, "a", "url"},
		{"missing origin", `{"a": {"name": "A", "url": "https://a.example.com/"}}`, "a", "origin"},
		{"origin with path", `{"a": {"name": "A", "url": "https://a.example.com/", "origin": "https://a.example.com/"}}`, "a", "origin"},
		{"origin with default port", `{"a": {"name": "A", "url": "https://a.example.com/", "origin": "https://a.example.com:443"}}`, "a", "origin"},
		{"origin null", `{"a": {"name": "A", "url": "https://a.example.com/", "origin": "null"}}`, "a", "origin"},
		// The origin goes into the page's frame-src as it is: a wildcard, or a character that
		// ends the directive, would widen the policy beyond the registered origins.
		{"origin wildcard", `{"a": {"name": "A", "url": "https://a.example.com/", "origin": "https://*"}}`, "a", "origin"},
		{"origin wildcard subdomain", `{"a": {"name": "A", "url": "https://a.example.com/", "origin": "https://*.example.com"}}`, "a", "origin"},
		{"origin ending the directive", `{"a": {"name": "A", "url": "https://a.example.com/", "origin": "https://a.example.com;script-src"}}`, "a", "origin"},
		{"origin with a quote", `{"a": {"name": "A", "url": "https://a.example.com/", "origin": "https://a'unsafe-inline'"}}`, "a", "origin"},
		{"origin with an empty port", `{"a": {"name": "A", "url": "https://a.example.com/", "origin": "https://a.example.com:"}}`, "a", "origin"},
		{"origin with a port that is no number", `{"a": {"name": "A", "url": "https://a.example.com/", "origin": "https://a.example.com:*"}}`, "a", "origin"},
		{"unknown icon", `{"a": {` + ok + `, "icon": "rocket"}}`, "a", "icon"},
		{"unknown capability", `{"a": {` + ok + `, "capabilities": ["camera"]}}`, "a", "capabilities"},
		{"unknown protocol", `{"a": {` + ok + `, "protocol": "mcp-apps"}}`, "a", "protocol"},
		{"protocol not a string", `{"a": {` + ok + `, "protocol": 3}}`, "a", "protocol"},
		{"unknown field", `{"a": {` + ok + `, "colour": "red"}}`, "a", "colour"},
		{"wrong type", `{"a": {"name": 7, "url": "https://a.example.com/", "origin": "https://a.example.com"}}`, "a", "name"},
		{"auth without audience", `{"a": {` + ok + `, "capabilities": ["auth"], "secret": "` + secretA + `"}}`, "a", "audience"},
		{"auth without secret", `{"a": {` + ok + `, "capabilities": ["auth"], "audience": "a"}}`, "a", "secret"},
		{"short secret", `{"a": {` + ok + `, "capabilities": ["auth"], "audience": "a", "secret": "short"}}`, "a", "secret"},
		{"secret without auth", `{"a": {` + ok + `, "secret": "` + secretA + `"}}`, "a", "secret"},
		{"audience without auth", `{"a": {` + ok + `, "audience": "a"}}`, "a", "audience"},
		{"shared secret", `{"a": {` + ok + auth + `}, "b": {"name": "B", "url": "https://b.example.com/", "origin": "https://b.example.com"` + auth + `}}`, "b", "secret"},
		{"repeated id", `{"a": {` + ok + `}, "a": {` + ok + `}}`, "a", ""},
		{"entry not an object", `{"a": []}`, "a", ""},
	} {
		_, err := Parse([]byte(tt.doc))
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%s: err = %v, want a FieldError", tt.name, err)
			continue
		}
		if fe.App != tt.app || fe.Field != tt.field {
			t.Errorf("%s: refused entry %q field %q (%v); want entry %q field %q", tt.name, fe.App, fe.Field, err, tt.app, tt.field)
		}
		if !strings.Contains(err.Error(), `entry "`+tt.app+`"`) {
			t.Errorf("%s: the message %q does not name the entry", tt.name, err)
		}
	}
}

func TestParseTakesOriginsAsBrowsersSpellThem(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://[::1]:5190":         "http://[::1]:5190",
		"HTTPS://Apps.Example.COM":  "https://apps.example.com",
		"http://127.0.0.1:5190":     "http://127.0.0.1:5190",
		"https://xn--bcher-kva.com": "https://xn--bcher-kva.com",
	} {
		got, err := parseOrigin(in)
		if err != nil || got != want {
			t.Errorf("parseOrigin(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestParseRefusesADocumentThatIsNotARegistry(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{`[]`, `"x"`, `{"a": {`, `{} {}`, `{"a": {}} x`} {
		if _, err := Parse([]byte(doc)); err == nil {
			t.Errorf("Parse(%s) accepted it", doc)
		}
	}
	reg, err := Parse([]byte("  "))
	if err != nil || len(reg.Apps()) != 0 {
		t.Fatalf("an empty registry: %v %v", reg, err)
	}
	var many strings.Builder
	many.WriteString("{")
	for i := range MaxApps + 1 {
		if i > 0 {
			many.WriteString(",")
		}
		many.WriteString(`"a` + strings.Repeat("x", i%20) + string(rune('a'+i%26)) + `": {}`)
	}
	many.WriteString("}")
	if _, err := Parse([]byte(many.String())); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Fatalf("%d apps: %v", MaxApps+1, err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(goodRegistry()))
	f.Add([]byte(`{"a": {"name": "A", "url": "https://a.example.com/", "origin": "https://a.example.com"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		reg, err := Parse(raw)
		if err != nil {
			return
		}
		for _, a := range reg.Apps() {
			if !appID.MatchString(a.ID) || a.Name == "" {
				t.Fatalf("accepted %+v", a)
			}
			if o, err := parseOrigin(a.Origin); err != nil || o != a.Origin {
				t.Fatalf("accepted origin %q (%v)", a.Origin, err)
			}
			if a.HasAuth() && (len(a.Secret) < MinSecretBytes || a.Audience == "") {
				t.Fatalf("accepted an auth app without a secret or audience: %+v", a)
			}
		}
	})
}

func TestProtocolDefaultsToOursAndTakesTheOthers(t *testing.T) {
	t.Parallel()
	const ok = `"name": "A", "url": "https://a.example.com/", "origin": "https://a.example.com"`
	for doc, want := range map[string]string{
		`{"a": {` + ok + `}}`:                            ProtocolVoicebox,
		`{"a": {` + ok + `, "protocol": "voicebox"}}`:    ProtocolVoicebox,
		`{"a": {` + ok + `, "protocol": "thunderbolt"}}`: ProtocolThunderbolt,
		`{"a": {` + ok + `, "protocol": "jsonrpc"}}`:     ProtocolJSONRPC,
	} {
		reg, err := Parse([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if a, _ := reg.Get("a"); a.Protocol != want {
			t.Errorf("%s: protocol %q, want %q", doc, a.Protocol, want)
		}
	}
}
