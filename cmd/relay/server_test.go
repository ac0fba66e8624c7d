package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestServeRefusesANetworkAddressWithoutTheGate: the refusal comes before anything listens.
func TestServeRefusesANetworkAddressWithoutTheGate(t *testing.T) {
	t.Setenv("VOICEBOX_LOOPBACK_AUTH", "")
	t.Setenv("VOICEBOX_STATE_DIR", filepath.Join(t.TempDir(), "state"))
	var stdout, stderr bytes.Buffer
	code := serveUntil(context.Background(), []string{"--addr", "0.0.0.0:0", "--public", t.TempDir()}, &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "VOICEBOX_LOOPBACK_AUTH=1") || stdout.Len() != 0 {
		t.Fatalf("serve on 0.0.0.0 without the gate: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}

// TestServeRefusesABadOrigin checks --origin before listening.
func TestServeRefusesABadOrigin(t *testing.T) {
	t.Setenv("VOICEBOX_STATE_DIR", filepath.Join(t.TempDir(), "state"))
	for _, o := range []string{"voicebox.example.com", "https://voicebox.example.com/app", "ftp://x", "https://u@x"} {
		var stdout, stderr bytes.Buffer
		if code := serveUntil(context.Background(), []string{"--addr", "127.0.0.1:0", "--origin", o, "--public", t.TempDir()}, &stdout, &stderr); code != 2 {
			t.Errorf("--origin %q: exit %d, want 2 (stderr %q)", o, code, stderr.String())
		}
	}
}

// writeTestCert writes a self-signed certificate for 127.0.0.1 and returns the files and a pool
// that trusts it.
func writeTestCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "voicebox test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	kb, _ := x509.MarshalECPrivateKey(key)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return certFile, keyFile, pool
}

// TestServeTLSWithTheGate serves TLS from a test certificate, bound to 0.0.0.0 with the gate on
// (traffic goes to 127.0.0.1 only): the ticket gives a Secure cookie, answers carry HSTS, and
// plain HTTP is not served.
func TestServeTLSWithTheGate(t *testing.T) {
	certFile, keyFile, pool := writeTestCert(t)
	public := t.TempDir()
	os.WriteFile(filepath.Join(public, "index.html"), []byte("<!doctype html>"), 0o644)
	t.Setenv("VOICEBOX_LOOPBACK_AUTH", "1")
	t.Setenv("VOICEBOX_STATE_DIR", filepath.Join(t.TempDir(), "state"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	exit := make(chan int, 1)
	go func() {
		exit <- serveUntil(ctx, []string{"--addr", "0.0.0.0:0", "--public", public, "--tls-cert", certFile, "--tls-key", keyFile}, outW, &stderr)
		outW.Close()
	}()
	out := bufio.NewReader(outR)
	line, _ := out.ReadString('\n')
	m := regexp.MustCompile(`^voicebox on https://\S+:(\d+)\n$`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("printed %q (stderr %s)", line, stderr.String())
	}
	line, _ = out.ReadString('\n')
	tm := regexp.MustCompile(`\?bootstrap=([0-9a-f]{64}) `).FindStringSubmatch(line)
	if tm == nil {
		t.Fatalf("printed %q, want the ticket", line)
	}
	go io.Copy(io.Discard, outR)
	base := "https://127.0.0.1:" + m[1]
	client := &http.Client{
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Get(base + "/?bootstrap=" + tm[1])
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 || !resp.Cookies()[0].Secure || !resp.Cookies()[0].HttpOnly {
		t.Fatalf("redeeming over TLS: %d cookies %v, want 303 and one Secure HttpOnly cookie", resp.StatusCode, resp.Cookies())
	}
	if h := resp.Header.Get("Strict-Transport-Security"); !strings.Contains(h, "max-age=") {
		t.Fatalf("no HSTS over TLS: %q", h)
	}
	req, _ := http.NewRequest("GET", base+"/", nil)
	req.AddCookie(resp.Cookies()[0])
	if resp, err = client.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the page with the session: %v %v", resp, err)
	}
	resp.Body.Close()
	if resp, err := http.Get("http://127.0.0.1:" + m[1] + "/api/health"); err == nil && resp.StatusCode == 200 {
		t.Fatalf("plain HTTP was served on the TLS port")
	}
	cancel()
	if code := <-exit; code != 0 {
		t.Fatalf("serve exited %d (stderr %s)", code, stderr.String())
	}
}
