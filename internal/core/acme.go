package core

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"
)

// ACMECacheDir is the directory, inside the host state directory, where the ACME account key
// and the certificates obtained are kept (0700; the files in it 0600).
const ACMECacheDir = "acme"

// ACME says where a relay's certificates come from when an ACME CA issues them.
type ACME struct {
	// Host is the one DNS name certificates are obtained for; "" turns ACME off. Running with it
	// agrees to the CA's terms of service.
	Host string
	// Email is the contact address given to the CA (optional).
	Email string
	// Directory is the CA's directory URL; "" means Let's Encrypt's production one.
	Directory string
}

// newACMEManager returns the certificate manager for s, caching in stateDir/acme (made 0700).
// It admits exactly s.Host, agrees to the CA's terms of service, and answers TLS-ALPN-01
// challenges through its TLS config; HTTPHandler answers HTTP-01 ones.
func newACMEManager(s ACME, stateDir string) (*autocert.Manager, error) {
	dir := filepath.Join(stateDir, ACMECacheDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("ACME cache: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("ACME cache: %w", err)
	}
	m := &autocert.Manager{
		Prompt:     autocert.AcceptTOS,
		Cache:      autocert.DirCache(dir),
		HostPolicy: autocert.HostWhitelist(s.Host),
		Email:      s.Email,
	}
	if s.Directory != "" {
		m.Client = &acme.Client{DirectoryURL: s.Directory}
	}
	return m, nil
}

// acmeTLSConfig is the TLS config of a relay whose certificates come from m: HTTP/1.1 only (the
// page's WebSockets go over HTTP/1.1), plus the ALPN protocol of TLS-ALPN-01 challenges.
func acmeTLSConfig(m *autocert.Manager) *tls.Config {
	return &tls.Config{
		GetCertificate: m.GetCertificate,
		NextProtos:     []string{"http/1.1", acme.ALPNProto},
		MinVersion:     tls.VersionTLS12,
	}
}
