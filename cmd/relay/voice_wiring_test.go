package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

func TestHelpListsTheVoiceFlagsAndVariables(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	run([]string{"--help"}, &out, io.Discard)
	for _, want := range []string{"-openai-url", "-gemini-url", "VOICEBOX_OPENAI_URL", "VOICEBOX_GEMINI_URL", "OPENAI_API_KEY", "GEMINI_API_KEY"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

func TestVendorURLs(t *testing.T) {
	t.Parallel()
	for url, ok := range map[string]bool{
		"wss://api.openai.com/v1/realtime": true,
		"ws://127.0.0.1:9999/v1/realtime":  true,
		"ws://localhost:1/x":               true,
		"ws://[::1]:1/x":                   true,
		"ws://vendor.example/v1/realtime":  false, // the key would cross a network in clear
		"https://api.openai.com":           false,
		"wss://user:pw@vendor.example/":    false,
		"not a url":                        false,
	} {
		if err := checkVendorURL(url); (err == nil) != ok {
			t.Errorf("checkVendorURL(%q) = %v; want ok %v", url, err, ok)
		}
	}
}

func TestServeRefusesAPlainVendorURL(t *testing.T) {
	t.Setenv("PORT", "0")
	t.Setenv("VOICEBOX_STATE_DIR", filepath.Join(t.TempDir(), "state"))
	t.Setenv("VOICEBOX_LOOPBACK_AUTH", "")
	t.Setenv("VOICEBOX_GEMINI_URL", "ws://vendor.example/live")
	var stderr bytes.Buffer
	code := serveUntil(context.Background(), []string{"--public", t.TempDir()}, io.Discard, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "VOICEBOX_GEMINI_URL") {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
}
