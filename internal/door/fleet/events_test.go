package fleet_test

import (
	"bytes"
	"testing"

	"github.com/voicebox-go/voicebox/internal/door/fleet"
)

func TestValidEventFrame(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		frame string
		ok    bool
	}{
		{"a call event", "event: call\ndata: {\"tool\":\"read_file\"}\n\n", true},
		{"approval-settled", "event: approval-settled\ndata: {\"id\":\"ap-1\"}\n\n", true},
		{"two events in one", "event: call\ndata: {}\n\nevent: approval\ndata: {}\n\n", false},
		{"a second data line", "event: call\ndata: {}\ndata: {}\n\n", false},
		{"a retry directive", "retry: 1\nevent: call\ndata: {}\n\n", false},
		{"an escaped carriage return", "event: call\ndata: {\"a\":\"\\r\"}\n\n", true}, // escaped in JSON: one line
		{"a raw carriage return", "event: call\ndata: {}\r\n\n", false},
		{"not JSON", "event: call\ndata: hello\n\n", false},
		{"no end", "event: call\ndata: {}\n", false},
		{"an odd name", "event: Call Me\ndata: {}\n\n", false},
		{"empty", "", false},
		{"too large", "event: call\ndata: \"" + string(bytes.Repeat([]byte("a"), fleet.MaxEventBytes)) + "\"\n\n", false},
	} {
		if got := fleet.ValidEventFrame([]byte(tt.frame)); got != tt.ok {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.ok)
		}
	}
}

// FuzzValidEventFrame: whatever it takes holds exactly one event of one data line.
func FuzzValidEventFrame(f *testing.F) {
	f.Add([]byte("event: call\ndata: {}\n\n"))
	f.Add([]byte("event: a\ndata: []\n\nevent: b\ndata: 1\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if !fleet.ValidEventFrame(b) {
			return
		}
		if bytes.Count(b, []byte("\n")) != 3 || bytes.Count(b, []byte("event: ")) < 1 || bytes.ContainsRune(b, '\r') {
			t.Fatalf("taken: %q", b)
		}
	})
}
