//go:build js && voicebox_worker

package engine

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/jsutil"
)

// TestWorkerSocketCarriesFramesBothWays: the page's socket sends frames of every size around its
// kept inbox's (and bytes that are not UTF-8, which only a binary message carries) and receives
// each back from the runner's echo as a binary frame, and as a text frame when it is UTF-8, byte
// for byte: through engine-io.js (as in the page's worker), and the generic way without it. Once
// the socket is closing, Send says it closed.
func TestWorkerSocketCarriesFramesBothWays(t *testing.T) {
	for _, withIO := range []bool{true, false} {
		t.Run("engine-io="+strconv.FormatBool(withIO), func(t *testing.T) {
			if !withIO {
				global := jsutil.Global()
				io := must(global.Get("voiceboxIO"))
				if io.IsUndefined() {
					t.Fatal("the worker runner set no voiceboxIO, as the page's worker.js does")
				}
				global.Delete("voiceboxIO")
				t.Cleanup(func() { global.Set("voiceboxIO", io) })
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			host, _ := must(must(jsutil.Global().Get("location")).Get("host")).String()
			s, err := dialSocket(ctx, "ws://"+host+"/echo")
			if err != nil {
				t.Fatal(err)
			}
			defer s.release()
			if s.hasIO != withIO {
				t.Fatalf("the socket moves bytes through engine-io.js: %v, want %v", s.hasIO, withIO)
			}
			var grown [][]byte // keeps the wasm memory grown between frames: a kept view would go stale
			for _, size := range []int{0, 1, 140, receiveScratchBytes/3 - 1, receiveScratchBytes / 3, receiveScratchBytes/3 + 1,
				receiveScratchBytes - 1, receiveScratchBytes, receiveScratchBytes + 1, 100 << 10} {
				frame := make([]byte, size)
				for i := range frame {
					frame[i] = 'a' + byte(i%26)
				}
				if err := s.Send(frame); err != nil {
					t.Fatalf("size %d: %v", size, err)
				}
				for _, kind := range []string{"binary", "text"} {
					got, err := s.Receive(ctx)
					if err != nil || !bytes.Equal(got, frame) {
						t.Fatalf("size %d, %s: received %d bytes (equal %v), %v", size, kind, len(got), bytes.Equal(got, frame), err)
					}
				}
				grown = append(grown, make([]byte, 4<<20))
			}
			notUTF8 := []byte{'{', 0xff, 0xfe, '}'}
			if err := s.Send(notUTF8); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Receive(ctx); err != nil || !bytes.Equal(got, notUTF8) {
				t.Fatalf("bytes that are not UTF-8 came back as %q, %v", got, err)
			}
			runtime.KeepAlive(grown)
			s.Close(1000, "done")
			if err := s.Send([]byte(`{}`)); !errors.Is(err, errSocketClosed) {
				t.Fatalf("Send on a closing socket: %v, want errSocketClosed", err)
			}
			select {
			case <-s.Done():
			case <-ctx.Done():
				t.Fatal("the socket did not close")
			}
			// A closed socket's callbacks are released at its close, not left for the page's end.
			if n := len(s.funcs); n != 0 {
				t.Fatalf("the closed socket still holds %d JavaScript callbacks", n)
			}
			if h := must(s.ws.Get("onmessage")); !h.IsNull() {
				t.Fatal("the closed socket's onmessage is still set")
			}
		})
	}
}
