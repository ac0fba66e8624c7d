package executor

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
)

// referenceJSON is what marshal wrote through encoding/json before the observations wrote their
// own: an Encoder without HTML escaping, its newline trimmed.
func referenceJSON(t testing.TB, v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// observationSamples are values of each observation that writes its own JSON, built from s and n.
func observationSamples(s string, n int64, flag bool) []rawjson.Appender {
	return []rawjson.Appender{
		&readObserved{Path: s, Size: n, Bytes: int(n), Truncated: flag, Encoding: "utf-8", Content: s + s},
		&readObserved{},
		writeObserved{Path: s, Bytes: int(n), Created: flag, ParentsCreated: !flag, Undoable: flag},
		writeObserved{Path: s, Undoable: !flag},
	}
}

func checkObservations(t *testing.T, s string, n int64, flag bool) {
	for _, v := range observationSamples(s, n, flag) {
		got, err := marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if want := referenceJSON(t, v); !bytes.Equal(got, want) {
			t.Errorf("%T wrote %.120s\nencoding/json writes %.120s", v, got, want)
		}
	}
}

func TestObservationsAgreeWithJSON(t *testing.T) {
	for _, s := range []string{"", "notes/a.txt", "<b>&amp;</b> \"q\" \\ \n\t\x00\x1f", "caf\u00e9 \u2028\u2029 \U0001F600",
		"bad \xff\xed\xa0\x80", strings.Repeat("long line ", 600)} {
		for _, n := range []int64{0, 1, -1, 4096, 1 << 40} {
			checkObservations(t, s, n, n%2 == 0)
			checkObservations(t, s, n, n%2 != 0)
		}
	}
}

func FuzzObservationsAgreeWithJSON(f *testing.F) {
	f.Add("a.txt", int64(4096), true)
	f.Add("<\xff\u2028>", int64(-7), false)
	f.Fuzz(func(t *testing.T, s string, n int64, flag bool) {
		checkObservations(t, s, n, flag)
	})
}
