package assistant

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// BenchmarkPublishReadUnwatched publishes the call event of a 4 KiB read with no page
// listening and no fleet, as every MCP client's read does while no page is open.
func BenchmarkPublishReadUnwatched(b *testing.B) {
	content, _ := json.Marshal(strings.Repeat("notes \"quoted\"\n", 4<<10/15))
	ev := callEvent{ID: "call-1", Source: "mcp", Tool: "read_file", OK: true, At: time.Now(),
		Action: json.RawMessage(`{"op":"read-file","path":"notes.md"}`),
		Result: json.RawMessage(`{"path":"notes.md","content":` + string(content) + `,"size":4096}`)}
	e := newEvents(slog.New(slog.DiscardHandler))
	for b.Loop() {
		e.publish("call", ev)
	}
}

// countingEvent counts its encodings.
type countingEvent struct{ n *int }

func (c countingEvent) MarshalJSON() ([]byte, error) { *c.n++; return []byte(`{}`), nil }

// TestAnUnwatchedEventIsNotEncoded: with no stream and no fleet, a call event is dropped
// without being encoded, and a turn event is still encoded and kept for the streams opened
// later.
func TestAnUnwatchedEventIsNotEncoded(t *testing.T) {
	e := newEvents(slog.New(slog.DiscardHandler))
	n := 0
	e.publish("call", countingEvent{&n})
	if n != 0 {
		t.Fatalf("an unwatched call event was encoded %d times", n)
	}
	e.publish("turn", countingEvent{&n})
	if n != 1 || len(e.recentTurns()) != 1 {
		t.Fatalf("a turn event was encoded %d times and %d kept", n, len(e.recentTurns()))
	}
}
