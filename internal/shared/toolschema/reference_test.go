package toolschema

import (
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The reference: santhosh-tekuri/jsonschema/v6 compiles each accepted schema (draft 2020-12, with
// a loader that refuses every URL) and its verdict on arguments is the one Validate must reach.
// The tests compare the two on the table cases, the JSON Schema suite and the fuzz targets.

type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("toolschema: a tool schema may not load %s", url)
}

// reference compiles s with the library.
func reference(t testing.TB, s *Schema) *jsonschema.Schema {
	t.Helper()
	const url = "urn:voicebox:tool-parameters"
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(url, s.doc); err != nil {
		t.Fatalf("the library refuses the schema %s: %v", s.JSON(), err)
	}
	compiled, err := c.Compile(url)
	if err != nil {
		t.Fatalf("the library does not compile the schema %s: %v", s.JSON(), err)
	}
	return compiled
}

// collect flattens the library's error tree into failures with their rule ids.
func collect(ve *jsonschema.ValidationError, found []failure) []failure {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			found = collect(c, found)
		}
		return found
	}
	path := slices.Clone(ve.InstanceLocation)
	loc := locOf(path)
	arg := quoteLoc(loc)
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		for _, m := range k.Missing {
			l := join(loc, m)
			found = append(found, failure{rank: rankRequired, loc: l, path: append(slices.Clip(path), m),
				why: fmt.Sprintf("missing required argument %s", quoteLoc(l))})
		}
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			l := join(loc, p)
			found = append(found, failure{rank: rankUnknown, loc: l, path: append(slices.Clip(path), p),
				why: fmt.Sprintf("unknown argument %s: the tool declares no such parameter", quoteLoc(l))})
		}
	case *kind.Type:
		found = append(found, failure{rank: rankType, loc: loc, path: path,
			why: fmt.Sprintf("argument %s must be %s, got %s", arg, typeNames(k.Want), typeName(k.Got))})
	case *kind.MinLength:
		found = append(found, failure{rank: rankBounds, rule: refusal.InvalidArgumentLength, loc: loc, path: path,
			why: fmt.Sprintf("argument %s is %s long, under the minimum of %d", arg, characters(int(k.Got)), k.Want)})
	case *kind.MaxLength:
		found = append(found, failure{rank: rankBounds, rule: refusal.InvalidArgumentLength, loc: loc, path: path,
			why: fmt.Sprintf("argument %s is %s long, over the maximum of %d", arg, characters(int(k.Got)), k.Want)})
	case *kind.Minimum:
		found = append(found, failure{rank: rankBounds, rule: refusal.InvalidArgumentRange, loc: loc, path: path,
			why: fmt.Sprintf("argument %s is %s, under the minimum of %s", arg, ratString(k.Got), ratString(k.Want))})
	case *kind.Maximum:
		found = append(found, failure{rank: rankBounds, rule: refusal.InvalidArgumentRange, loc: loc, path: path,
			why: fmt.Sprintf("argument %s is %s, over the maximum of %s", arg, ratString(k.Got), ratString(k.Want))})
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = show(w)
		}
		found = append(found, failure{rank: rankEnum, loc: loc, path: path,
			why: fmt.Sprintf("argument %s is %s, not one of %s", arg, show(k.Got), clip(strings.Join(want, ", ")))})
	default:
		found = append(found, failure{rank: rankEnum + 1, loc: loc, path: path,
			why: fmt.Sprintf("argument %s is not valid: %v", arg, ve.ErrorKind)})
	}
	return found
}

// validateReference is Validate with the library deciding steps 6 to 9 in place of the package's
// own check: every other step is the same code, so the two must answer alike on every input.
func validateReference(ref *jsonschema.Schema, s *Schema, raw []byte) (map[string]any, error) {
	return s.validate(raw, MaxArgumentBytes, func(args map[string]any, found []failure) []failure {
		verr := ref.Validate(args)
		var ve *jsonschema.ValidationError
		if errors.As(verr, &ve) {
			return collect(ve, found)
		}
		if verr != nil {
			return append(found, failure{rank: rankEnum + 1, rule: refusal.InvalidToolArguments, why: verr.Error()})
		}
		return found
	})
}

func typeNames(ts []string) string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = typeName(t)
	}
	return strings.Join(out, " or ")
}

// agreesWithReference fails t unless Validate and validateReference give the same answer on raw:
// the same accepted value, or a refusal with the same rule and sentence.
func agreesWithReference(t testing.TB, s *Schema, raw []byte) {
	t.Helper()
	got, err := s.Validate(raw)
	want, wantErr := validateReference(reference(t, s), s, raw)
	switch {
	case err == nil && wantErr == nil:
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("on %.200q: Validate returned %v, the reference %v", raw, got, want)
		}
	case err == nil || wantErr == nil:
		t.Fatalf("on %.200q against %s: Validate says %v, the reference %v", raw, s.JSON(), err, wantErr)
	case err.Error() != wantErr.Error():
		t.Fatalf("on %.200q against %s: Validate refuses %q, the reference %q", raw, s.JSON(), err, wantErr)
	}
}

// ratString writes a decimal number exactly, as the package's decimal does: every JSON number is a
// finite decimal. The reference's bounds come as math/big's Rat.
func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	for prec := 1; prec <= MaxNumberLiteralBytes+MaxNumberExponent; prec++ {
		s := r.FloatString(prec)
		if back, ok := new(big.Rat).SetString(s); ok && back.Cmp(r) == 0 {
			return s
		}
	}
	return r.FloatString(MaxNumberLiteralBytes)
}
