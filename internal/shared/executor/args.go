package executor

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// argSpec is one string argument of a primitive.
type argSpec struct {
	name     string
	required bool
	enum     []string
}

// parseArgs checks raw against specs: a JSON object whose keys are all in specs (matched exactly,
// case and all), each a string (null counts as absent), the required ones present. It returns
// the values by name, "" for an absent optional one.
func parseArgs(raw json.RawMessage, specs []argSpec) (map[string]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	m := make(map[string][]byte, len(specs))
	if raw[0] != '{' || !rawjson.Members(raw, func(name string, value []byte) bool {
		m[name] = value // a name given twice: the last, as encoding/json keeps
		return true
	}) {
		return nil, refusal.New(refusal.InvalidToolArguments, "the arguments must be a JSON object")
	}
	known := make([]string, len(specs))
	for i, s := range specs {
		known[i] = s.name
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(known, k) {
			if len(known) == 0 {
				return nil, refusal.New(refusal.InvalidArgument, "unknown argument %q: this tool takes no arguments", k)
			}
			return nil, refusal.New(refusal.InvalidArgument, "unknown argument %q: the arguments are %s", k, strings.Join(known, ", "))
		}
	}
	out := make(map[string]string, len(specs))
	for _, s := range specs {
		v, ok := m[s.name]
		if !ok || string(v) == "null" {
			if s.required {
				return nil, refusal.New(refusal.MissingArgument, "missing required argument %q (null counts as missing)", s.name)
			}
			continue
		}
		str, ok := decodeString(v)
		if !ok {
			return nil, refusal.New(refusal.InvalidArgumentType, "argument %q must be a string", s.name)
		}
		if s.enum != nil && !slices.Contains(s.enum, str) {
			return nil, refusal.New(refusal.InvalidArgumentEnum, "argument %q must be one of %s, not %q", s.name, strings.Join(s.enum, ", "), str)
		}
		out[s.name] = str
	}
	return out, nil
}

// decodeString decodes v, a JSON value that has already been checked as valid JSON, when it is a
// string. A string with no escapes and valid UTF-8 is its own content, which saves two passes
// over a large write's content; anything else is decoded as encoding/json decodes it.
func decodeString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	if body := v[1 : len(v)-1]; bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return string(body), true
	}
	return rawjson.Unquote(v)
}

// pathArgs is parseArgs for a primitive whose first argument is the required "path" of a file,
// followed by specs; the path has passed fsroot.Check. The audit note names the path when there
// is one.
func pathArgs(raw json.RawMessage, specs ...argSpec) (map[string]string, auditNote, error) {
	args, err := parseArgs(raw, append([]argSpec{{name: "path", required: true}}, specs...))
	if err != nil {
		return nil, auditNote{}, err
	}
	note := auditNote{Path: args["path"]}
	if err := fsroot.Check(args["path"]); err != nil {
		return nil, note, err
	}
	return args, note, nil
}
