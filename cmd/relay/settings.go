package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/voicebox-go/voicebox/internal/core"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/core/session"
	"github.com/voicebox-go/voicebox/internal/door/extensionhost"
	"github.com/voicebox-go/voicebox/internal/door/fleet"
	"github.com/voicebox-go/voicebox/internal/relay"
)

// serveSettings is what serve runs with once its flags and the environment are read and checked:
// the relay's Config (its listeners and state directory are filled in once they exist) and
// where to listen.
type serveSettings struct {
	relay.Config
	addr     string
	acmeHTTP string
}

// settle reads the flags, with the environment where a flag is not given, into serve's settings.
// An error is a usage error: serve says it and exits 2 before it touches anything.
func (cfg *serveConfig) settle(stderr io.Writer) (*serveSettings, error) {
	public := orEnv(cfg.public, "VOICEBOX_PUBLIC_DIR") // "": the page embedded in the binary
	var err error
	helloMS := cfg.helloBound
	if helloMS == 0 {
		if v := os.Getenv("VOICEBOX_HELLO_BOUND_MS"); v != "" {
			if helloMS, err = strconv.Atoi(v); err != nil || helloMS <= 0 {
				return nil, fmt.Errorf("VOICEBOX_HELLO_BOUND_MS=%q is not a positive number of milliseconds", v)
			}
		}
	}
	if helloMS < 0 {
		return nil, errors.New("--hello-bound-ms must be positive")
	}
	gated := false
	switch v := os.Getenv("VOICEBOX_LOOPBACK_AUTH"); v {
	case "", "0":
	case "1":
		gated = true
	default:
		return nil, fmt.Errorf("VOICEBOX_LOOPBACK_AUTH=%q: use 1 (on) or 0 (off)", v)
	}
	addr, err := listenAddr(cfg.addr, os.Getenv("PORT"), gated)
	if err != nil {
		return nil, err
	}
	origin := orEnv(cfg.origin, "VOICEBOX_ORIGIN")
	if origin != "" {
		if origin, err = server.ParseOrigin(origin); err != nil {
			return nil, fmt.Errorf("--origin: %v", err)
		}
	}
	lifetime := session.DefaultLifetime
	if v := orEnv(cfg.lifetime, "VOICEBOX_SESSION_LIFETIME"); v != "" {
		if lifetime, err = time.ParseDuration(v); err != nil || lifetime < time.Second {
			return nil, fmt.Errorf("session lifetime %q is not a duration of at least 1s (such as 8h or 30m)", v)
		}
	}
	trusted, err := server.ParseTrustedProxies(orEnv(cfg.trusted, "VOICEBOX_TRUSTED_PROXY"))
	if err != nil {
		return nil, fmt.Errorf("--trusted-proxy: %v", err)
	}
	log, err := newLogger(stderr, orEnv(cfg.logFormat, "VOICEBOX_LOG_FORMAT"))
	if err != nil {
		return nil, fmt.Errorf("--log-format: %v", err)
	}
	certFile, keyFile := orEnv(cfg.tlsCert, "VOICEBOX_TLS_CERT"), orEnv(cfg.tlsKey, "VOICEBOX_TLS_KEY")
	acmeCfg := relay.ACME{Host: orEnv(cfg.acme.Host, "VOICEBOX_ACME_HOST"), Email: orEnv(cfg.acme.Email, "VOICEBOX_ACME_EMAIL"),
		Directory: orEnv(cfg.acme.Directory, "VOICEBOX_ACME_DIRECTORY")}
	acmeHTTP := orEnv(cfg.acmeHTTP, "VOICEBOX_ACME_HTTP_ADDR")
	if acmeCfg.Host != "" {
		if certFile != "" || keyFile != "" {
			return nil, errors.New("--acme-host and --tls-cert/--tls-key both say where the certificate comes from; use one of them")
		}
		if acmeCfg.Host, err = checkACMEHost(acmeCfg.Host); err != nil {
			return nil, err
		}
		if origin == "" {
			origin = "https://" + acmeCfg.Host
		} else if u, _ := url.Parse(origin); u.Scheme != "https" || u.Hostname() != acmeCfg.Host {
			return nil, fmt.Errorf("--origin %s must be https on the --acme-host %s (the certificate names that host)", origin, acmeCfg.Host)
		}
		if acmeHTTP != "" {
			if acmeHTTP, err = listenAddr(acmeHTTP, "", gated); err != nil {
				return nil, fmt.Errorf("--acme-http-addr: %v", err)
			}
		}
	} else if acmeCfg.Email != "" || acmeCfg.Directory != "" || acmeHTTP != "" {
		return nil, errors.New("--acme-email, --acme-directory and --acme-http-addr need --acme-host")
	}
	var tlsConfig *tls.Config
	if certFile != "" || keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("TLS needs both --tls-cert and --tls-key: %v", err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	miniApps, err := loadMiniApps(cfg.miniApps)
	if err != nil {
		return nil, err
	}
	vendorURLs, err := cfg.vendorURLs()
	if err != nil {
		return nil, err
	}
	nats, err := settleNATS(cfg.nats)
	if err != nil {
		return nil, err
	}
	workspace := orEnv(cfg.workspace, "VOICEBOX_WORKSPACE")
	if workspace != "" {
		if fi, err := os.Stat(workspace); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("--workspace (VOICEBOX_WORKSPACE) %q is not a folder: name one that exists (it is a declaration, never made)", workspace)
		}
	}
	placement := orEnv(cfg.wasmPlace, "VOICEBOX_WASM_PLACEMENT")
	if placement != "" && placement != extensionhost.WasmInRelay && placement != extensionhost.WasmInPage {
		return nil, fmt.Errorf("--wasm-placement %q: say relay or page", placement)
	}
	return &serveSettings{addr: addr, acmeHTTP: acmeHTTP, Config: relay.Config{Config: core.Config{Public: public, HelloBound: time.Duration(helloMS) * time.Millisecond,
		Gated: gated, Origin: origin, SessionLifetime: lifetime, Deployment: orEnv(cfg.deployment, "VOICEBOX_DEPLOYMENT"), TrustedProxies: trusted, Log: log, TLS: tlsConfig,
		ACME: acmeCfg, VendorURLs: vendorURLs}, MiniApps: miniApps, WasmShelfDir: orEnv(cfg.wasmShelf, "VOICEBOX_WASM_SHELF_DIR"), WasmPlacement: placement, Fleet: nats, Workspace: workspace}}, nil
}

// settleNATS reads the fleet's flags, with the environment where a flag is not given. A relay id
// not given is the host name and a random suffix.
func settleNATS(c fleet.Config) (fleet.Config, error) {
	nats := fleet.Config{URL: orEnv(c.URL, "VOICEBOX_NATS"), Credentials: orEnv(c.Credentials, "VOICEBOX_NATS_CREDS"),
		CA: orEnv(c.CA, "VOICEBOX_NATS_CA"), Cert: orEnv(c.Cert, "VOICEBOX_NATS_CERT"), Key: orEnv(c.Key, "VOICEBOX_NATS_KEY"),
		Prefix: orEnv(c.Prefix, "VOICEBOX_NATS_PREFIX"), RelayID: orEnv(c.RelayID, "VOICEBOX_RELAY_ID"), Replicas: c.Replicas}
	if env := os.Getenv("VOICEBOX_NATS_REPLICAS"); nats.Replicas == 0 && env != "" {
		n, err := strconv.Atoi(env)
		if err != nil || n < 1 || n > fleet.MaxReplicas {
			return fleet.Config{}, fmt.Errorf("VOICEBOX_NATS_REPLICAS must be a count from 1 to %d, not %q", fleet.MaxReplicas, env)
		}
		nats.Replicas = n
	}
	if nats.Replicas < 0 || nats.Replicas > fleet.MaxReplicas {
		return fleet.Config{}, fmt.Errorf("--nats-replicas must be from 1 to %d, not %d", fleet.MaxReplicas, nats.Replicas)
	}
	if nats.URL == "" && (nats.Credentials != "" || nats.CA != "" || nats.Cert != "" || nats.Key != "" || nats.Prefix != "" || nats.RelayID != "" || nats.Replicas != 0) {
		return fleet.Config{}, errors.New("--nats-creds, --nats-ca, --nats-cert, --nats-key, --nats-prefix, --nats-replicas and --relay-id need --nats (or VOICEBOX_NATS)")
	}
	if (nats.Cert == "") != (nats.Key == "") {
		return fleet.Config{}, errors.New("a NATS client certificate needs both --nats-cert and --nats-key")
	}
	if nats.RelayID == "" && nats.URL != "" {
		host, _ := os.Hostname()
		nats.RelayID = fleet.SafeName(host) + "-" + fleet.RandomSuffix()
	}
	return nats, nil
}
