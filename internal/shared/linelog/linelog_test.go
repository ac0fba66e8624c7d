package linelog_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/linelog"
)

// TestWholeEnd: a last line without its newline is torn, whatever its length (past the chunk
// WholeEnd reads back at a time too); with valid, a last line it refuses is torn as well, unless
// it is longer than MaxCheckedLineBytes; without, every line that ends with its newline is whole.
func TestWholeEnd(t *testing.T) {
	long := strings.Repeat("x", 10000)
	for _, c := range []struct {
		in    string
		valid func([]byte) bool
		want  string
	}{
		{"", nil, ""},
		{"{}\n", nil, "{}\n"},
		{"{}\n{", nil, "{}\n"},
		{"{", nil, ""},
		{"{}\n" + long, nil, "{}\n"},
		{long, nil, ""},
		{"{}\n" + long + "\n", nil, "{}\n" + long + "\n"},
		{"{}\n{\"a\":\n", nil, "{}\n{\"a\":\n"},
		{"{}\n{\"a\":\n", json.Valid, "{}\n"},
		{"{}\n{\"a\":1}\n", json.Valid, "{}\n{\"a\":1}\n"},
		{"{}\n" + strings.Repeat("x", linelog.MaxCheckedLineBytes+1) + "\n", json.Valid, "{}\n" + strings.Repeat("x", linelog.MaxCheckedLineBytes+1) + "\n"},
	} {
		end, err := linelog.WholeEnd(bytes.NewReader([]byte(c.in)), int64(len(c.in)), c.valid)
		if err != nil || c.in[:end] != c.want {
			t.Errorf("WholeEnd(%.20q..., valid %v) = %d, %v; want %d", c.in, c.valid != nil, end, err, len(c.want))
		}
		if got := linelog.Whole([]byte(c.in), c.valid); string(got) != c.want {
			t.Errorf("Whole(%.20q...) = %d bytes, want %d", c.in, len(got), len(c.want))
		}
	}
}
