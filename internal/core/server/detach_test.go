package server_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/voicebox-go/voicebox/internal/core/server"
)

// TestDetachHoldsDrain: a request whose handler detached counts as served until its done is
// called, however long after the handler returned; done twice counts once; a request that did
// not come through a Server gets a done that does nothing.
func TestDetachHoldsDrain(t *testing.T) {
	t.Parallel()
	srv, err := server.New(server.Config{Public: t.TempDir(), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	dones := make(chan func(), 1)
	srv.Handle("GET /held", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dones <- server.Detach(r)
		w.WriteHeader(http.StatusNoContent)
	}))
	ts := httptest.NewServer(srv)
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/held")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	done := <-dones
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if srv.Drain(ended) == nil {
		t.Fatal("Drain returned while a detached request was held")
	}
	done()
	done()
	if err := srv.Drain(context.Background()); err != nil {
		t.Fatalf("Drain after done: %v", err)
	}
	server.Detach(httptest.NewRequest("GET", "/", nil))() // no Server: nothing held, no panic
}
