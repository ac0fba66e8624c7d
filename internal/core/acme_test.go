package core

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestACMEManager checks, without a network, what can be checked of ACME: the cache directory is
// 0700 in the state directory, the manager's host policy admits only the configured name (and
// GetCertificate refuses another before asking any CA), and the TLS config offers the TLS-ALPN-01
// protocol.
func TestACMEManager(t *testing.T) {
	state := t.TempDir()
	os.MkdirAll(filepath.Join(state, ACMECacheDir), 0o755)
	m, err := newACMEManager(ACME{Host: "voicebox.example.com", Email: "ops@example.com"}, state)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(filepath.Join(state, ACMECacheDir)); err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("the cache directory: %v %v, want 0700", info.Mode(), err)
	}
	ctx := context.Background()
	if err := m.HostPolicy(ctx, "voicebox.example.com"); err != nil {
		t.Fatalf("the configured host is refused: %v", err)
	}
	for _, other := range []string{"evil.example.com", "example.com", "www.voicebox.example.com"} {
		if err := m.HostPolicy(ctx, other); err == nil {
			t.Errorf("the host policy admits %s", other)
		}
		if _, err := m.GetCertificate(&tls.ClientHelloInfo{ServerName: other}); err == nil {
			t.Errorf("GetCertificate answered for %s", other)
		}
	}
	cfg := acmeTLSConfig(m)
	if strings.Join(cfg.NextProtos, ",") != "http/1.1,acme-tls/1" || cfg.GetCertificate == nil {
		t.Fatalf("TLS config offers %v", cfg.NextProtos)
	}
}
