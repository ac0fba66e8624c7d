package voice

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// KeysFile is the state file the key store keeps vendor keys in (0600, in the 0700 state
// directory).
const KeysFile = ".vendor-keys.json"

// Bounds of a vendor key: printable ASCII without spaces, so it can go in a header as it is.
const (
	MinKeyBytes = 8
	MaxKeyBytes = 512
)

// maxKeysFileBytes bounds what is read of KeysFile.
const maxKeysFileBytes = 64 << 10

// Keys holds the vendor keys: a key stored with PUT /api/keys (by the host) wins over the
// provider's environment variable. Keys never leave the relay: nothing here logs, and Status
// says only whether a key is there and where it came from. It is safe for concurrent use.
type Keys struct {
	state *hoststate.Dir
	env   func(string) string
	// envName maps a provider to its environment variable.
	envName map[string]string

	mu sync.Mutex
}

// NewKeys returns the key store over state (nil keeps no file: only the environment counts),
// reading the environment through getenv (nil means os.Getenv). envName names each provider's
// variable.
func NewKeys(state *hoststate.Dir, getenv func(string) string, envName map[string]string) *Keys {
	if getenv == nil {
		getenv = os.Getenv
	}
	return &Keys{state: state, env: getenv, envName: envName}
}

func (k *Keys) stored() (map[string]string, error) {
	m := map[string]string{}
	if k.state == nil {
		return m, nil
	}
	b, err := k.state.ReadFile(KeysFile, maxKeysFileBytes)
	if err != nil || b == nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return map[string]string{}, fmt.Errorf("voice: %s does not parse; remove it and store the keys again", KeysFile)
	}
	return m, nil
}

// Key returns provider's key ("" when none is configured).
func (k *Keys) Key(provider string) string {
	k.mu.Lock()
	m, _ := k.stored()
	k.mu.Unlock()
	if v := m[provider]; v != "" {
		return v
	}
	if name := k.envName[provider]; name != "" {
		return k.env(name)
	}
	return ""
}

// Source says where provider's key comes from: "store", "environment", or "" when it has none.
func (k *Keys) Source(provider string) string {
	k.mu.Lock()
	m, _ := k.stored()
	k.mu.Unlock()
	switch {
	case m[provider] != "":
		return "store"
	case k.envName[provider] != "" && k.env(k.envName[provider]) != "":
		return "environment"
	}
	return ""
}

// Set stores provider's key; an empty key removes the stored one (the environment's, if any,
// counts again). A key that is not 8 to 512 printable ASCII characters without spaces is
// refused live-key-invalid; the refusal never repeats it.
func (k *Keys) Set(provider, key string) error {
	if _, ok := k.envName[provider]; !ok {
		return refusal.New(refusal.LiveProviderUnknown, "no live provider that takes a key is called %q", provider)
	}
	if key != "" && !ValidKey(key) {
		return refusal.New(refusal.LiveKeyInvalid, "a vendor key is %d to %d printable ASCII characters with no spaces", MinKeyBytes, MaxKeyBytes)
	}
	if k.state == nil {
		return refusal.New(refusal.InternalError, "this relay has no state directory to keep keys in")
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	m, err := k.stored()
	if err != nil {
		m = map[string]string{}
	}
	if key == "" {
		delete(m, provider)
	} else {
		m[provider] = key
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := k.state.WriteFile(KeysFile, append(b, '\n')); err != nil {
		if rf, ok := refusal.As(err); ok {
			return rf // state-disk-full
		}
		return refusal.New(refusal.InternalError, "the relay could not write its key store")
	}
	return nil
}

// ValidKey reports whether key can be a vendor key.
func ValidKey(key string) bool {
	if len(key) < MinKeyBytes || len(key) > MaxKeyBytes {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x21 || key[i] > 0x7e {
			return false
		}
	}
	return true
}
