package toolschema

import (
	"math/big"
	"regexp"
	"testing"
)

// jsonNumber is RFC 8259's grammar of a number, which parseDecimal reads.
var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// exponentWithin reports whether a number literal's written exponent is within maxDecimalExponent.
func exponentWithin(s string) bool {
	m := jsonNumber.FindStringSubmatch(s)
	if m == nil || m[3] == "" {
		return true
	}
	e, ok := new(big.Int).SetString(m[3][1:], 10)
	return ok && e.CmpAbs(big.NewInt(maxDecimalExponent)) <= 0
}

// checkDecimal holds parseDecimal and the decimal's methods to math/big's Rat on the literals a
// and b: the same value, comparison, integer test, int64 and exact text.
func checkDecimal(t *testing.T, a, b string) {
	t.Helper()
	da, okA := parseDecimal(a)
	db, okB := parseDecimal(b)
	if want := jsonNumber.MatchString(a) && exponentWithin(a); okA != want {
		t.Fatalf("parseDecimal(%q) ok %v, want %v", a, okA, want)
	}
	if !okA || !okB {
		return
	}
	ra, _ := new(big.Rat).SetString(a)
	rb, _ := new(big.Rat).SetString(b)
	if got, want := da.cmp(db), ra.Cmp(rb); got != want {
		t.Fatalf("cmp(%q, %q) = %d, want %d", a, b, got, want)
	}
	if got, want := da.sign(), ra.Sign(); got != want {
		t.Fatalf("sign(%q) = %d, want %d", a, got, want)
	}
	if got, want := da.isInt(), ra.IsInt(); got != want {
		t.Fatalf("isInt(%q) = %v, want %v", a, got, want)
	}
	x, fits := da.int64()
	wantFits := ra.IsInt() && ra.Num().IsInt64()
	if fits != wantFits || fits && x != ra.Num().Int64() {
		t.Fatalf("int64(%q) = %d, %v; want %v", a, x, fits, ra)
	}
	if got, want := da.String(), ratString(ra); got != want {
		t.Fatalf("String(%q) = %q, want %q", a, got, want)
	}
}

// TestDecimalMatchesBigRat: the package's decimal against math/big on literals at the edges.
func TestDecimalMatchesBigRat(t *testing.T) {
	t.Parallel()
	lits := []string{"0", "-0", "0.0", "0e5", "1", "-1", "10", "100", "1e2", "1E+2", "1.0", "1.50", "-1.5",
		"0.001", "1e-3", "12.5e1", "125e-1", "9223372036854775807", "9223372036854775808",
		"-9223372036854775808", "-9223372036854775809", "1e18", "1e19", "1e400", "1e-400", "0.1e1",
		"01", "1.", ".5", "+1", "1e", "--1", "1e+", "0x10", "1/2", "", "-", "1e0000400", "1e1000000"}
	for _, a := range lits {
		for _, b := range lits {
			checkDecimal(t, a, b)
		}
	}
}

// FuzzDecimal: the same on any pair of strings.
func FuzzDecimal(f *testing.F) {
	f.Add("1.5", "15e-1")
	f.Add("-0.001", "-1e-3")
	f.Add("123456789012345678901234567890", "1.2e29")
	f.Fuzz(func(t *testing.T, a, b string) {
		if len(a) > MaxNumberLiteralBytes || len(b) > MaxNumberLiteralBytes {
			return
		}
		checkDecimal(t, a, b)
	})
}
