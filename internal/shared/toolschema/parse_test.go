package toolschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// decode is the reference the parser is held to: encoding/json with UseNumber. It parses raw as exactly one JSON value with numbers kept as json.Number, so that no value is
// rounded on the way in.
func decode(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the value")
	}
	return v, nil
}

// scanDepth returns the bracket depth of raw without parsing it, for input the decoder refused:
// it tells a value nested too deeply apart from one that is merely malformed.
func scanDepth(raw []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

func FuzzParser(f *testing.F) {
	for _, s := range []string{
		typicalArgs, argsSchema, `{"a":1,"a":2}`, `"\ud83d\ude00"`, `"\ud800"`, `"\ud800\u0041"`, `"\udc00\ud800"`,
		`"\ud800\uzzzz"`, `[1e5,-0.0,0,-1.5E-7]`, `01`, `1.`, `-`, `{"a" 1}`, `[1,]`, `"a\/b\b\f\n\r\t"`, "\"\x01\"",
		`{"k":[[[]]],"n":null,"t":true,"f":false}`, ` 1 `, `1 2`, `tru`, strings.Repeat("[", 40) + strings.Repeat("]", 40),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !utf8.Valid(raw) {
			return // both callers refuse invalid UTF-8 before parsing
		}
		got, _, gotErr := parseJSON(raw, 10000, len(raw)+1)
		want, wantErr := decode(raw)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("parser error %v, encoding/json error %v, for %q", gotErr, wantErr, raw)
		}
		if gotErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("parser %#v, encoding/json %#v, for %q", got, want, raw)
		}
	})
}

func TestParserDepthLimit(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		raw  string
		max  int
		deep bool
	}{
		{"{}", 1, false}, {`{"a":{}}`, 1, true}, {`{"a":[1]}`, 2, false}, {`[[[]]]`, 2, true}, {`1`, 0, false}, {`[]`, 0, true},
	} {
		_, _, err := parseJSON([]byte(tt.raw), tt.max, 100)
		if errors.Is(err, errTooDeep) != tt.deep || (!tt.deep && err != nil) {
			t.Errorf("parseJSON(%s, %d) = %v, want too deep %v", tt.raw, tt.max, err, tt.deep)
		}
	}
}
