package miniapp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/voicebox-go/voicebox/internal/shared/names"
	"github.com/voicebox-go/voicebox/internal/shared/toolschema"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The encoding/json code of ParseDeclaration, Declaration.JSON and stringField before they read and
// wrote without reflection, kept as their reference.

func referenceParseDeclaration(raw []byte) (*Declaration, error) {
	if len(raw) > MaxDeclarationBytes {
		return nil, refusal.New(refusal.InvalidToolParameters,
			"the declaration is %d bytes, over the bound of %d", len(raw), MaxDeclarationBytes)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, refusal.New(refusal.InvalidToolDeclaration, "a tool declaration must be a JSON object {name, description, parameters}")
	}
	// Field names match exactly (encoding/json alone would also take "NAME"); fields other than
	// these (the SDK's execute, WebMCP's title or outputSchema) are ignored and not carried.
	var name, description string
	if err := referenceStringField(fields, "name", &name); err != nil {
		return nil, refusal.New(refusal.InvalidToolName, "the declaration %s", err)
	}
	if r := names.Check("the tool name", name); r != nil {
		return nil, r
	}
	if !ValidWebMCPToolName(name) {
		return nil, refusal.New(refusal.InvalidToolName,
			"tool name %q must be 1 to %d of a-z, A-Z, 0-9, _, - and . (the WebMCP name rule)", clip(name), MaxWebMCPToolNameLength)
	}
	if err := referenceStringField(fields, "description", &description); err != nil {
		return nil, refusal.New(refusal.InvalidToolDescription, "tool %q: the declaration %s", name, err)
	}
	if n := utf8.RuneCountInString(description); n == 0 || n > MaxDescriptionLength {
		return nil, refusal.New(refusal.InvalidToolDescription,
			"the description of tool %q is %d characters; it must be 1 to %d", name, n, MaxDescriptionLength)
	}
	dj := struct{ Parameters, InputSchema, Annotations json.RawMessage }{
		fields["parameters"], fields["inputSchema"], fields["annotations"]}
	params := dj.Parameters
	switch {
	case params != nil && dj.InputSchema != nil:
		return nil, refusal.New(refusal.InvalidToolParameters,
			"tool %q declares both parameters and inputSchema; declare one", name)
	case params == nil:
		params = dj.InputSchema
	}
	if params == nil {
		params = noParameters
	}
	dialect, draft := toolschema.Original, false
	if raw, ok := fields["dialect"]; ok {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || s != DraftDialect {
			return nil, refusal.New(refusal.InvalidToolDeclaration, "tool %q: dialect must be %q or absent", name, DraftDialect)
		}
		dialect, draft = toolschema.WebMCPDraft, true
	}
	schema, err := toolschema.ParseDialect(params, dialect)
	if err != nil {
		r, _ := refusal.As(err)
		return nil, refusal.New(r.Rule, "tool %q: %s", name, r.Why)
	}
	d := &Declaration{Name: name, Description: description, Parameters: schema, Draft: draft}
	if dj.Annotations != nil {
		var ann struct {
			ReadOnlyHint         *json.RawMessage `json:"readOnlyHint"`
			UntrustedContentHint *json.RawMessage `json:"untrustedContentHint"`
		}
		if err := json.Unmarshal(dj.Annotations, &ann); err != nil {
			return nil, refusal.New(refusal.InvalidToolParameters, "tool %q: annotations must be an object", name)
		}
		for _, h := range []struct {
			key string
			raw *json.RawMessage
			out *bool
		}{{"readOnlyHint", ann.ReadOnlyHint, &d.ReadOnly}, {"untrustedContentHint", ann.UntrustedContentHint, &d.UntrustedContent}} {
			if h.raw == nil {
				continue
			}
			if err := json.Unmarshal(*h.raw, h.out); err != nil {
				return nil, refusal.New(refusal.InvalidToolParameters,
					"tool %q: annotations.%s must be true or false", name, h.key)
			}
		}
	}
	return d, nil
}

func referenceDeclarationJSON(d *Declaration) json.RawMessage {
	type annotations struct {
		ReadOnlyHint         bool `json:"readOnlyHint,omitempty"`
		UntrustedContentHint bool `json:"untrustedContentHint,omitempty"`
	}
	out := struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Annotations *annotations    `json:"annotations,omitempty"`
		Dialect     string          `json:"dialect,omitempty"`
	}{Name: d.Name, Description: d.Description, Parameters: d.Parameters.JSON()}
	if d.Draft {
		out.Dialect = DraftDialect
	}
	if d.ReadOnly || d.UntrustedContent {
		out.Annotations = &annotations{d.ReadOnly, d.UntrustedContent}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(out) // strings and a valid RawMessage always encode
	return bytes.TrimRight(buf.Bytes(), "\n")
}

func referenceStringField(fields map[string]json.RawMessage, key string, out *string) error {
	v, ok := fields[key]
	if !ok {
		return fmt.Errorf("has no %s", key)
	}
	if err := json.Unmarshal(v, out); err != nil {
		return fmt.Errorf("has a %s that is not a string", key)
	}
	return nil
}

var declarations = []string{
	`{"name":"add","description":"Adds.","parameters":{"type":"object","properties":{"a":{"type":"number"}}}}`,
	`{"name":"add","description":"<Adds> & \u2028","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true,"UNTRUSTEDCONTENTHINT":true,"x":1}}`,
	`{"name":"a","description":"d","annotations":{"readOnlyHint":null}}`, `{"name":"a","description":"d","annotations":{"readOnlyHint":1}}`,
	`{"name":"a","description":"d","annotations":null}`, `{"name":"a","description":"d","annotations":[]}`, `{"name":"a","description":"d","annotations":"x"}`,
	`{"name":"a","description":"d","annotations":{"readOnlyHint":false,"readOnlyHint":true}}`, `{"name":"a","description":"d","annotations":{"readOnlyHint":true,"readOnlyHint":null}}`,
	`{"name":"a","description":"d","dialect":"webmcp-draft"}`, `{"name":"a","description":"d","dialect":null}`, `{"name":"a","description":"d","dialect":1}`,
	`{"name":null,"description":"d"}`, `{"name":"a","description":null}`, `{"name":1,"description":"d"}`, `{"NAME":"a","description":"d"}`,
	`{"name":"a","name":"b","description":"d"}`, `{"name":"a","description":"d","parameters":{},"inputSchema":{}}`, `{"name":"a","description":"d","parameters":null}`,
	`null`, `[]`, `"x"`, `{"name":"a","description":"d"} x`, `{`, ``, `{"name":"a\u00e9","description":"d"}`, `{"name":"a","description":"\ud800"}`,
}

func checkDeclaration(t *testing.T, raw []byte) {
	got, gotErr := ParseDeclaration(raw)
	want, wantErr := referenceParseDeclaration(raw)
	gr, _ := refusal.As(gotErr)
	wr, _ := refusal.As(wantErr)
	if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && (gr == nil || wr == nil || gr.Rule != wr.Rule || gr.Why != wr.Why)) {
		t.Fatalf("ParseDeclaration(%.120q): %v; through encoding/json %v", raw, gotErr, wantErr)
	}
	if gotErr != nil {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseDeclaration(%.120q) = %+v; through encoding/json %+v", raw, got, want)
	}
	if g, w := got.JSON(), referenceDeclarationJSON(want); !bytes.Equal(g, w) {
		t.Fatalf("Declaration.JSON wrote %s; encoding/json %s", g, w)
	}
}

func TestDeclarationsAgreeWithJSON(t *testing.T) {
	for _, d := range declarations {
		checkDeclaration(t, []byte(d))
	}
}

func FuzzDeclarations(f *testing.F) {
	for _, d := range declarations {
		f.Add([]byte(d))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkDeclaration(t, raw) })
}

func TestEncodeArgsAgreesWithJSON(t *testing.T) {
	s, err := toolschema.Parse([]byte(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{`{}`, `{"a":1.50,"b":"<&> \u2028","c":[null,true,{"d":[]}],"e":-0}`, `{"z":1,"a":{"y":2,"b":3}}`} {
		valid, err := s.Validate([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(valid); err != nil {
			t.Fatal(err)
		}
		if got, err := encodeArgs(valid); err != nil || !bytes.Equal(got, bytes.TrimRight(buf.Bytes(), "\n")) {
			t.Errorf("encodeArgs(%s) = %s, %v; encoding/json %s", raw, got, err, buf.Bytes())
		}
	}
}
