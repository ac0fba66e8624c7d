//go:build !js

package harness

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestAMissingFirefoxIsAnErrorThatSaysWhatToInstall: without a Firefox where VOICEBOX_FIREFOX
// points, the start is an error naming the path and the package to install (NewFirefoxTab fails
// the test with it, never skips), and nothing is started.
func TestAMissingFirefoxIsAnErrorThatSaysWhatToInstall(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-firefox")
	t.Setenv("VOICEBOX_FIREFOX", missing)
	ff := &sharedFirefox{}
	err := ff.start()
	if err == nil || !strings.Contains(err.Error(), "no Firefox at "+missing) || !strings.Contains(err.Error(), "firefox-esr") {
		t.Fatalf("starting a missing Firefox answered %v", err)
	}
	if ff.cmd != nil || ff.profile != "" {
		t.Fatalf("a missing Firefox left a process (%v) or a profile (%q)", ff.cmd, ff.profile)
	}
}

// TestFirefoxCallResultsDecode: script.callFunction's answers as Firefox sends them: the JSON
// text the function returned, null (a wait's falsy condition), an exception with its text.
func TestFirefoxCallResultsDecode(t *testing.T) {
	got, err := decodeCallResult(json.RawMessage(`{"type":"success","realm":"r","result":{"type":"string","value":"{\"a\":[1,\"é\"]}"}}`), false)
	if err != nil || string(got) != `{"a":[1,"é"]}` {
		t.Fatalf("a string result decoded as %s %v", got, err)
	}
	if _, err := decodeCallResult(json.RawMessage(`{"type":"success","result":{"type":"null"}}`), true); !errors.Is(err, errNotYet) {
		t.Fatalf("null while waiting answered %v, want errNotYet", err)
	}
	if got, err := decodeCallResult(json.RawMessage(`{"type":"success","result":{"type":"null"}}`), false); err != nil || string(got) != "null" {
		t.Fatalf("null answered %s %v", got, err)
	}
	if _, err := decodeCallResult(json.RawMessage(`{"type":"exception","exceptionDetails":{"text":"ReferenceError: voicebox is not defined"}}`), false); err == nil || !strings.Contains(err.Error(), "voicebox is not defined") {
		t.Fatalf("an exception answered %v", err)
	}
	if _, err := decodeCallResult(json.RawMessage(`{"type":"success","result":{"type":"number","value":3}}`), false); err == nil {
		t.Fatal("a number, not JSON text, was taken")
	}
}
