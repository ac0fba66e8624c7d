package strictjson

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // a local zone with summer time, the same on every machine
)

// timeSamples are JSON values as a record's time member may hold them: what the page writes, and
// every way time.Parse(time.RFC3339) accepts or refuses one.
var timeSamples = []string{
	// What the page's records hold (rawjson.AppendTime: MarshalJSON's form).
	`"2026-12-06T05:17:53.123456789Z"`, `"2026-12-06T05:17:53Z"`, `"2026-12-06T06:17:53.5+01:00"`, `"0000-01-01T00:00:00Z"`,
	`"9999-12-31T23:59:59.999999999Z"`, `"2026-07-01T12:00:00+02:00"`, `"2026-01-01T12:00:00+02:00"`, `"2026-07-01T12:00:00+01:00"`,
	`"2026-03-29T02:30:00+01:00"`, `"2026-10-25T02:30:00+02:00"`, `"2026-10-25T02:30:00+01:00"`, `"2026-12-06T05:17:53-09:30"`,
	`"2026-12-06T05:17:53+00:00"`, `"2026-12-06T05:17:53-00:00"`, `"2026-12-06T05:17:53+14:00"`, `"2026-12-06T05:17:53-12:00"`,
	// time.Parse's leniencies.
	`"2026-12-06T5:17:53Z"`, `"2026-12-06T05:17:53,5Z"`, `"2026-12-06T05:17:53.1234567891234Z"`, `"2026-12-06T05:17:53+24:00"`,
	`"2026-12-06T05:17:53+23:60"`, `"2026-12-06T05:17:53-24:60"`, `"2026-12-06T05:17:53.0Z"`, `"2024-02-29T00:00:00Z"`,
	`"2000-02-29T00:00:00Z"`, `"2026-12-06T05:17:53+05:45"`, `"2026-12-06T05:17:53.000000001+01:00"`,
	// Refused, each element in turn.
	`""`, `"2026"`, `"202"`, `"x026-12-06T05:17:53Z"`, `"2x26-12-06T05:17:53Z"`, `"+026-12-06T05:17:53Z"`, `"2026_12-06T05:17:53Z"`,
	`"2026-1-06T05:17:53Z"`, `"2026-00-06T05:17:53Z"`, `"2026-13-06T05:17:53Z"`, `"2026-12_06T05:17:53Z"`, `"2026-12-6T05:17:53Z"`,
	`"2026-12-06t05:17:53Z"`, `"2026-12-06 05:17:53Z"`, `"2026-12-06Tx5:17:53Z"`, `"2026-12-06T24:17:53Z"`, `"2026-12-06T99:17:53Z"`,
	`"2026-12-06T05-17:53Z"`, `"2026-12-06T05:7:53Z"`, `"2026-12-06T05:60:53Z"`, `"2026-12-06T05:17_53Z"`, `"2026-12-06T05:17:5Z"`,
	`"2026-12-06T05:17:60Z"`, `"2026-12-06T05:17:53"`, `"2026-12-06T05:17:53z"`, `"2026-12-06T05:17:53.Z"`, `"2026-12-06T05:17:53.5"`,
	`"2026-12-06T05:17:53ZZ"`, `"2026-12-06T05:17:53Z "`, `"2026-12-06T05:17:53+01"`, `"2026-12-06T05:17:53+0100"`, `"2026-12-06T05:17:53+01:0"`,
	`"2026-12-06T05:17:53*01:00"`, `"2026-12-06T05:17:53+25:00"`, `"2026-12-06T05:17:53+01:61"`, `"2026-12-06T05:17:53+25:61"`,
	`"2026-12-06T05:17:53*25:00"`, `"2026-12-06T05:17:53+2x:00"`, `"2026-12-06T05:17:53+25:x0"`, `"2026-12-06T05:17:53+x5:61"`,
	`"2026-12-06T05:17:53+01:00:00"`, `"2026-12-06T05:17:53+01:00x"`, `"2026-02-29T00:00:00Z"`, `"1900-02-29T00:00:00Z"`,
	`"2026-04-31T00:00:00Z"`, `"2026-12-00T00:00:00Z"`, `"2026-12-32T00:00:00Z"`, `"2026-02-30T00:00:00Zjunk"`,
	`"2026-12-06T05:17:53Z\u00e9"`, `"2026-12-06T05:17:53Z` + "\xff\xef\xbf\xbd\x01\x7f\"\\" + `"`, `"\u0032026-12-06T05:17:53Z"`,
	`"yesterday"`, `"2026-12-06T05:17:53.5.5Z"`, `"2026-12-06T05:17:53,Z"`, `"2026-12-06T5Z"`, `"2026-12-06T5:7:5Z"`,
	// Not strings.
	`null`, `1`, `{}`, `[]`, `true`, `"`, `"x`, `x"`,
}

// checkReadTime holds readTime to (*time.Time).UnmarshalJSON: the same time (its instant, its
// location, its encoding, compared deeply) or the same error (a *time.ParseError's every field),
// and for a string, time.Parse(time.RFC3339Nano) accepts what it accepts, at the same instant and
// offset.
func checkReadTime(t *testing.T, v []byte) {
	t.Helper()
	before := time.Date(2001, 2, 3, 4, 5, 6, 7, time.UTC)
	got, want := before, before
	gotErr := readTime(v, &got)
	wantErr := want.UnmarshalJSON(v)
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("readTime(%q) = %v, %v; UnmarshalJSON %v, %v", v, got, gotErr, want, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("readTime(%q) = %#v (%v); UnmarshalJSON %#v (%v)", v, got, got, want, want)
	}
	if gotErr != nil {
		if gotErr.Error() != wantErr.Error() {
			t.Fatalf("readTime(%q) says %q; UnmarshalJSON %q", v, gotErr, wantErr)
		}
		var gp, wp *time.ParseError
		if errors.As(gotErr, &gp) != errors.As(wantErr, &wp) || (gp != nil && *gp != *wp) {
			t.Fatalf("readTime(%q) = %#v; UnmarshalJSON %#v", v, gotErr, wantErr)
		}
	}
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return
	}
	nano, nanoErr := time.Parse(time.RFC3339Nano, string(v[1:len(v)-1]))
	if (nanoErr == nil) != (gotErr == nil) {
		t.Fatalf("readTime(%q) = %v; time.Parse(time.RFC3339Nano) %v", v, gotErr, nanoErr)
	}
	_, gotOffset := got.Zone()
	_, nanoOffset := nano.Zone()
	if nanoErr == nil && (!nano.Equal(got) || nanoOffset != gotOffset || nano.Location() != got.Location() && nano.Location().String() != got.Location().String()) {
		t.Fatalf("readTime(%q) = %v; time.Parse(time.RFC3339Nano) %v", v, got, nano)
	}
}

// inLocal runs f with time.Local a zone with summer time (+01:00 in winter, +02:00 in summer), so
// that an offset the local zone has at that instant reads as Local, as time.Parse reads it. The
// tests that call it are not parallel: no other test runs meanwhile.
func inLocal(t testing.TB, f func()) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	for _, local := range []*time.Location{time.Local, time.UTC, paris, time.FixedZone("EST", -5*3600)} {
		was := time.Local
		time.Local = local
		f()
		time.Local = was
	}
}

func TestReadTimeAgreesWithTime(t *testing.T) {
	inLocal(t, func() {
		for _, s := range timeSamples {
			checkReadTime(t, []byte(s))
		}
	})
}

func TestReadTimeKeepsLocalAndFixedZones(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	was := time.Local
	time.Local = paris
	defer func() { time.Local = was }()
	tests := []struct {
		in, zone string
		offset   int
	}{
		{`"2026-07-01T12:00:00+02:00"`, "CEST", 7200}, // Paris in summer: Local
		{`"2026-01-01T12:00:00+01:00"`, "CET", 3600},  // Paris in winter: Local
		{`"2026-07-01T12:00:00+01:00"`, "", 3600},     // not Paris's offset in summer: a fixed zone
		{`"2026-07-01T12:00:00Z"`, "UTC", 0},
	}
	for _, tt := range tests {
		var got time.Time
		if err := readTime([]byte(tt.in), &got); err != nil {
			t.Fatalf("readTime(%s) = %v", tt.in, err)
		}
		name, offset := got.Zone()
		if offset != tt.offset || (tt.zone != "" && name != tt.zone) || (tt.zone == "CET" || tt.zone == "CEST") != (got.Location() == paris) {
			t.Errorf("readTime(%s) = %v in %q (%s, %d), want zone %q at %d", tt.in, got, got.Location(), name, offset, tt.zone, tt.offset)
		}
	}
}

func FuzzReadTimeAgreesWithTime(f *testing.F) {
	for _, s := range timeSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		inLocal(t, func() { checkReadTime(t, v) })
	})
}

// FuzzReadTimeOfDigits fuzzes the digits of a well-formed time, where the fuzzer's random bytes
// seldom reach: every field's range, the leap days, the zone's offsets.
func FuzzReadTimeOfDigits(f *testing.F) {
	f.Add(uint16(2024), uint8(2), uint8(29), uint8(23), uint8(59), uint8(59), uint32(999999999), int16(24*60), uint8(9), true)
	f.Add(uint16(1900), uint8(2), uint8(29), uint8(0), uint8(60), uint8(60), uint32(0), int16(-61), uint8(0), false)
	f.Fuzz(func(t *testing.T, year uint16, month, day, hour, minute, sec uint8, frac uint32, offset int16, fracDigits uint8, z bool) {
		var b strings.Builder
		b.WriteString(`"`)
		b.WriteString(pad(int(year)%10000, 4))
		b.WriteString("-" + pad(int(month)%100, 2) + "-" + pad(int(day)%100, 2) + "T" + pad(int(hour)%100, 2) + ":" + pad(int(minute)%100, 2) + ":" + pad(int(sec)%100, 2))
		if n := int(fracDigits) % 14; n > 0 {
			b.WriteString("." + pad(int(frac)%1000000000, 9)[:min(n, 9)] + strings.Repeat("7", max(0, n-9)))
		}
		switch {
		case z:
			b.WriteString("Z")
		case offset < 0:
			b.WriteString("-" + pad(int(-offset)/60%100, 2) + ":" + pad(int(-offset)%60, 2))
		default:
			b.WriteString("+" + pad(int(offset)/100%100, 2) + ":" + pad(int(offset)%100, 2))
		}
		b.WriteString(`"`)
		inLocal(t, func() { checkReadTime(t, []byte(b.String())) })
	})
}

// pad writes n in width digits, zeros first.
func pad(n, width int) string {
	s := make([]byte, width)
	for i := width - 1; i >= 0; i-- {
		s[i] = byte('0' + n%10)
		n /= 10
	}
	return string(s)
}

// BenchmarkReadTime reads a record's time as the page writes it, against UnmarshalJSON.
func BenchmarkReadTime(b *testing.B) {
	v := []byte(`"2026-12-06T05:17:53.123456789Z"`)
	b.Run("readTime", func(b *testing.B) {
		b.ReportAllocs()
		var t time.Time
		for b.Loop() {
			if err := readTime(v, &t); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("UnmarshalJSON", func(b *testing.B) {
		b.ReportAllocs()
		var t time.Time
		for b.Loop() {
			if err := t.UnmarshalJSON(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
