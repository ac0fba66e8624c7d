package openai_test

import (
	"context"
	"encoding/base64"
	"sync/atomic"
	"testing"

	"github.com/voicebox-go/voicebox/internal/core/live"
	"github.com/voicebox-go/voicebox/internal/core/live/openai"
)

// discard is a transport that answers the setup at once and throws every frame away, so a
// benchmark measures the relay's own work per frame: the gates, the provider's encoding.
type discard struct {
	onEvent func(live.TransportEvent)
	bytes   atomic.Int64
}

func (d *discard) CarriesHeaders() bool { return true }
func (d *discard) Connect(_ context.Context, _ string, opts live.ConnectOptions) error {
	d.onEvent = opts.OnEvent
	opts.OnEvent(live.TransportEvent{Kind: live.TransportOpened})
	opts.OnEvent(live.TransportEvent{Kind: live.TransportMessage, Data: []byte(`{"type":"session.updated","session":{}}`)})
	return nil
}
func (d *discard) Send(_ live.SendKind, frame []byte) error {
	d.bytes.Add(int64(len(frame)))
	return nil
}
func (d *discard) Close(int, string) {}

func benchSession(b *testing.B, cb live.Callbacks) (*live.Conversation, *discard) {
	reg := &live.Providers{}
	openai.Register(reg)
	d := &discard{}
	s, err := reg.Start(context.Background(), live.Config{Choice: live.Choice{Provider: openai.Name}, Key: "sk-bench-0123456789", Transport: d, Callbacks: cb})
	if err != nil || !s.Ready() {
		b.Fatalf("start: %v (ready %v)", err, s != nil && s.Ready())
	}
	b.Cleanup(s.Close)
	return s, d
}

// BenchmarkSendAudioFrame is the relay's CPU per 20 ms input frame (960 bytes at 24 kHz): the
// rate and ready gates and the provider's base64 append event, up to the transport.
//
//	go test -run '^$' -bench AudioFrame -benchmem ./internal/core/live/openai/
func BenchmarkSendAudioFrame(b *testing.B) {
	s, _ := benchSession(b, live.Callbacks{})
	frame := make([]byte, 960)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if err := s.SendAudio(frame, openai.Rate); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReceiveAudioFrame is the relay's CPU per 100 ms output delta from the vendor (4800
// bytes of PCM16 as base64 in JSON), from the transport up to the host's callback.
func BenchmarkReceiveAudioFrame(b *testing.B) {
	var got atomic.Int64
	_, d := benchSession(b, live.Callbacks{OnAudio: func(pcm []byte, _ int) { got.Add(int64(len(pcm))) }})
	ev := []byte(`{"type":"response.output_audio.delta","response_id":"resp_1","item_id":"item_1","output_index":0,"content_index":0,"delta":"` +
		base64.StdEncoding.EncodeToString(make([]byte, 4800)) + `"}`)
	b.SetBytes(4800)
	b.ReportAllocs()
	for b.Loop() {
		d.onEvent(live.TransportEvent{Kind: live.TransportMessage, Data: ev})
	}
	if got.Load() == 0 {
		b.Fatal("no audio came through")
	}
}
