package textf

import (
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"testing"
	"time"
)

type kind int

func (k kind) String() string { return "kind-" + fmt.Sprint(int(k)) }

type (
	count  uint16
	label  string
	flag   bool
	weight float32
)

// values are one of each kind of value textf promises to print as fmt does.
var values = []any{
	nil, true, false, 0, 7, -42, int8(-8), int16(300), int32(0x1F600), 'é', int64(-1 << 63),
	uint(9), uint8(255), uint16(65535), uint32(1 << 31), uint64(1<<64 - 1), uintptr(12),
	0.0, 1.5, -2.25e-7, 1e21, 123456789.0, float32(0.1),
	"", "plain", "quote \" and \\ and \n", "ünïcödé ✓", "bad \xff utf-8", "a\x00nul",
	[]byte("bytes \x01"), []byte(nil),
	errors.New("an error"), fs.ErrNotExist, kind(3), time.Duration(1500) * time.Millisecond,
	count(12), label("a label"), flag(true), weight(2.5),
}

var formats = []string{
	"%v", "%s", "%q", "%d", "%x", "%X", "%T", "%%", "[%5d]", "[%-5d]", "[%05d]", "%02X", "%04X",
	"%08d", "%012d", "%.32s", "%.3s", "%.0s", "%+q", "%#q", "%#x", "% x", "%+d", "% d", "[%8s]",
	"[%-8s]", "[%10v]", "%.3d", "%.0d", "%#X", "[%8q]",
}

// TestAgreesWithFmt holds Sprintf to fmt.Sprintf for every format and value textf covers, and
// for the malformed formats fmt marks (a missing argument, one too many, no verb).
func TestAgreesWithFmt(t *testing.T) {
	t.Parallel()
	for _, f := range formats {
		for _, v := range values {
			if f == "%%" {
				continue
			}
			want := fmt.Sprintf(f, v)
			if !covered(f, v) {
				continue
			}
			if got := Sprintf(f, v); got != want {
				t.Errorf("Sprintf(%q, %T(%v)) = %q, fmt says %q", f, v, v, got, want)
			}
		}
	}
	for _, c := range []struct {
		format string
		args   []any
	}{
		{"no verbs", nil},
		{"100%% sure", nil},
		{"%s and %d and %q", []any{"a", 1, "b"}},
		{"missing %s and %d", []any{"a"}},
		{"extra %s", []any{"a", 2, "c"}},
		{"trailing %", []any{}},
		{"%s", []any{kind(2)}},
		{"%d", []any{kind(2)}},
		{"%!", []any{1}},
		{"%z", []any{1}},
		{"the path %q has an element of %d bytes, over the bound of %d", []any{"a/b", 300, 255}},
		{"section %d: %v", []any{uint8(3), errors.New("short")}},
	} {
		want := fmt.Sprintf(c.format, c.args...)
		if got := Sprintf(c.format, c.args...); got != want {
			t.Errorf("Sprintf(%q, %v) = %q, fmt says %q", c.format, c.args, got, want)
		}
	}
}

// covered reports whether textf promises fmt's output for verb f of v: every value under the
// verbs of its kind, and what fmt marks bad when the verb does not fit.
func covered(f string, v any) bool {
	switch v.(type) {
	case float64, float32, weight:
		return f == "%v" || f == "%T" || f == "[%10v]" || f == "%s" || f == "%q"
	case bool, flag:
		return f == "%v" || f == "%T" || f == "[%10v]"
	case nil:
		return f == "%v" || f == "%T" || f == "[%10v]"
	case error:
		return regexp.MustCompile(`[vsqxXT]$`).MatchString(f)
	}
	return true
}

// TestErrorfWraps holds Errorf's message to fmt.Errorf's and its %w arguments to errors.Is.
func TestErrorfWraps(t *testing.T) {
	t.Parallel()
	inner, other := errors.New("inner"), fs.ErrExist
	for _, c := range []struct {
		format string
		args   []any
		is     []error
	}{
		{"plain %d", []any{1}, nil},
		{"open the log: %w", []any{inner}, []error{inner}},
		{"save %s: %s: %w", []any{"app", "a/b", inner}, []error{inner}},
		{"two: %w and %w", []any{inner, other}, []error{inner, other}},
		{"not an error: %w", []any{"text"}, nil},
		{"nil: %w", []any{nil}, nil},
	} {
		want := fmt.Errorf(c.format, c.args...)
		got := Errorf(c.format, c.args...)
		if got.Error() != want.Error() {
			t.Errorf("Errorf(%q).Error() = %q, fmt says %q", c.format, got.Error(), want.Error())
		}
		for _, target := range c.is {
			if !errors.Is(got, target) {
				t.Errorf("Errorf(%q) does not wrap %v", c.format, target)
			}
		}
		if len(c.is) == 0 && errors.Unwrap(got) != nil {
			t.Errorf("Errorf(%q) wraps %v, wrapping nothing", c.format, errors.Unwrap(got))
		}
	}
}

// verbs are the formats FuzzAgreesWithFmt keeps: textf's verbs with flags, width and precision.
var verbs = regexp.MustCompile(`%[-+# 0]*[0-9]{0,3}(\.[0-9]{0,3})?[vsqdxX%]`)

// FuzzAgreesWithFmt holds Sprintf to fmt.Sprintf for any format made of textf's verbs, over a
// string, an int and a uint.
func FuzzAgreesWithFmt(f *testing.F) {
	for _, s := range formats {
		f.Add(s+" and %q, %d", "text", int64(-3), uint64(7))
	}
	f.Add("%s%s%s%s", "a\xffb", int64(1), uint64(2))
	f.Fuzz(func(t *testing.T, format, s string, i int64, u uint64) {
		rest := verbs.ReplaceAllString(format, "")
		for k := 0; k < len(rest); k++ {
			if rest[k] == '%' {
				return // a verb outside textf's set
			}
		}
		for _, args := range [][]any{{s, i, u}, {i, u, s}, {u, s, i}, {[]byte(s), label(s), count(u)}} {
			want := fmt.Sprintf(format, args...)
			if got := Sprintf(format, args...); got != want {
				t.Errorf("Sprintf(%q, %#v) = %q, fmt says %q", format, args, got, want)
			}
		}
	})
}
