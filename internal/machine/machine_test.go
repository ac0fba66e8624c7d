package machine

import (
	"context"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
)

func TestChannelURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
		ok             bool
	}{
		{"http base", "http://127.0.0.1:8787", "ws://127.0.0.1:8787/channel", true},
		{"http with a slash", "http://127.0.0.1:8787/", "ws://127.0.0.1:8787/channel", true},
		{"https", "https://relay.example", "wss://relay.example/channel", true},
		{"ws with its path", "ws://[::1]:9000/channel", "ws://[::1]:9000/channel", true},
		{"no scheme", "127.0.0.1:8787", "", false},
		{"ftp", "ftp://127.0.0.1", "", false},
		{"empty", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ChannelURL(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("ChannelURL(%q) = %q, %v", tt.in, got, err)
			}
		})
	}
}

func TestRunRefusesABadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
	}{
		{"bad relay", Config{Relay: "nowhere", Bearer: "vbx_x", Root: fsroot.NewMemory()}},
		{"bearer without prefix", Config{Relay: "http://127.0.0.1:1", Bearer: "secret", Root: fsroot.NewMemory()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Run(context.Background(), tt.cfg); err == nil {
				t.Fatal("Run accepted it")
			}
		})
	}
}
