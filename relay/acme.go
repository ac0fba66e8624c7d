package main

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"
)

// ACMECacheDir is the directory, inside the host state directory, where the ACME account key
// and the certificates obtained are kept (0700; the files in it 0600).
const ACMECacheDir = "acme"

// acmeSettings are the ACME flags of serve.
type acmeSettings struct {
	host      string // the one DNS name certificates are obtained for
	email     string // the contact address given to the CA (optional)
	directory string // the CA's directory URL; empty means Let's Encrypt's production one
}

// checkACMEHost accepts a DNS name with at least one dot: no scheme, port, path or IP address
// (the certificate names the host the page is opened at).
func checkACMEHost(host string) (string, error) {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "" || strings.ContainsAny(h, ":/@ ") || !strings.Contains(h, ".") || net.ParseIP(h) != nil {
		return "", fmt.Errorf("--acme-host %q must be a DNS name such as voicebox.example.com (no scheme, port or IP address)", host)
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return "", fmt.Errorf("--acme-host %q is not a DNS name", host)
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "", fmt.Errorf("--acme-host %q is not a DNS name (letters, digits and '-' between dots)", host)
			}
		}
	}
	return h, nil
}

// newACMEManager returns the certificate manager for s, caching in stateDir/acme (made 0700).
// It admits exactly s.host, agrees to the CA's terms of service (running with --acme-host is
// that agreement), and answers TLS-ALPN-01 challenges through its TLS config; HTTPHandler
// answers HTTP-01 ones.
func newACMEManager(s acmeSettings, stateDir string) (*autocert.Manager, error) {
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
		HostPolicy: autocert.HostWhitelist(s.host),
		Email:      s.email,
	}
	if s.directory != "" {
		m.Client = &acme.Client{DirectoryURL: s.directory}
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
