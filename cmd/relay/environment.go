package main

import (
	"fmt"

	"github.com/voicebox-go/voicebox/internal/core/hub"
	"github.com/voicebox-go/voicebox/internal/core/session"
)

// envVar is one environment variable the relay reads: its name, the flag that wins over it when
// both are given ("" when none does), and what it means.
type envVar struct {
	Name, Flag, Doc string
}

// environment is every environment variable the relay reads, in the order `relay help` and
// docs/reference.md list them. TestEnvironmentTableIsComplete fails when the code reads a
// variable this table does not name, or the table names one nothing reads. The page reads none:
// what it needs reaches it from the relay.
var environment = []envVar{
	{"PORT", "", fmt.Sprintf("the port to listen on when --addr is not given (default %d; 0 takes a free port)", DefaultPort)},
	{"VOICEBOX_LOOPBACK_AUTH", "", "1 turns the session gate on: the page and /api/* need a session made from the one-time bootstrap address printed at start (or the host token); required to listen on anything but a loopback address"},
	{"VOICEBOX_PUBLIC_DIR", "public", "the directory the page is served from (default: the page built into this binary)"},
	{"VOICEBOX_STATE_DIR", "state-dir", "the host state directory: host token, pairings, keys, settings, extensions (default: the user's configuration directory + /voicebox)"},
	{"VOICEBOX_EXTENSIONS_DIR", "extensions-dir", "the old name of VOICEBOX_STATE_DIR, still taken"},
	{"VOICEBOX_HELLO_BOUND_MS", "hello-bound-ms", fmt.Sprintf("milliseconds a /channel connection that is not the page has to send its hello (default %d)", hub.DefaultHelloBound.Milliseconds())},
	{"VOICEBOX_ORIGIN", "origin", "the public origin the page is opened at; also the default --host of relay check-app"},
	{"VOICEBOX_TLS_CERT", "tls-cert", "the TLS certificate file"},
	{"VOICEBOX_TLS_KEY", "tls-key", "the TLS key file"},
	{"VOICEBOX_SESSION_LIFETIME", "session-lifetime", fmt.Sprintf("how long a session lasts (default %v)", session.DefaultLifetime)},
	{"VOICEBOX_DEPLOYMENT", "deployment", "the deployment's name, which names the session cookie: a fleet's relays share one, relays apart on one host need two (default: the fleet's prefix, else the relay's port)"},
	{"VOICEBOX_TRUSTED_PROXY", "trusted-proxy", "the trusted reverse proxies, CIDR[,CIDR...]"},
	{"VOICEBOX_ACME_HOST", "acme-host", "the host name to obtain certificates for with ACME"},
	{"VOICEBOX_ACME_EMAIL", "acme-email", "the ACME contact address"},
	{"VOICEBOX_ACME_DIRECTORY", "acme-directory", "the ACME directory URL"},
	{"VOICEBOX_ACME_HTTP_ADDR", "acme-http-addr", "where to answer ACME HTTP-01 challenges"},
	{"VOICEBOX_LOG_FORMAT", "log-format", "auto, json or text"},
	{"MINI_APPS", "mini-apps", "the external mini-app registry as JSON: an object keyed by app id, each {name, description, url, origin, icon, capabilities, protocol, audience, secret} (docs/external-apps.md)"},
	{"OPENAI_API_KEY", "", "the OpenAI key for live voice (a key stored with PUT /api/keys wins)"},
	{"GEMINI_API_KEY", "", "the Gemini key for live voice (a key stored with PUT /api/keys wins)"},
	{"VOICEBOX_LIVE_PROVIDER", "", "the live provider (gemini or openai) a relay with no saved voice settings starts with (default gemini)"},
	{"LIVE_PROVIDER", "", "read when VOICEBOX_LIVE_PROVIDER is unset"},
	{"VOICEBOX_WORKSPACE", "workspace", "a folder of this machine the assistant's tools act on, served in-process as a paired `relay env` would serve it (docs/configuration.md)"},
	{"VOICEBOX_WASM_SHELF_DIR", "wasm-shelf-dir", "the WASM shelf's directory"},
	{"VOICEBOX_WASM_PLACEMENT", "wasm-placement", "relay or page: where WebAssembly modules run"},
	{"VOICEBOX_OPENAI_URL", "openai-url", "the OpenAI Realtime endpoint"},
	{"VOICEBOX_GEMINI_URL", "gemini-url", "the Gemini Live endpoint"},
	{"VOICEBOX_NATS", "nats", "the fleet's NATS server URLs (docs/scaling.md)"},
	{"VOICEBOX_NATS_CREDS", "nats-creds", "the NATS credentials file"},
	{"VOICEBOX_NATS_CA", "nats-ca", "the CAs the NATS server's certificate is checked against"},
	{"VOICEBOX_NATS_CERT", "nats-cert", "the NATS client certificate"},
	{"VOICEBOX_NATS_KEY", "nats-key", "the NATS client key"},
	{"VOICEBOX_NATS_PREFIX", "nats-prefix", "the fleet's bucket and subject prefix"},
	{"VOICEBOX_RELAY_ID", "relay-id", "this relay's name in the fleet"},
	{"VOICEBOX_NATS_REPLICAS", "nats-replicas", "JetStream replicas of the fleet's buckets and streams"},
	{"VOICEBOX_MCP_BEARER_FILE", "bearer-file", "the MCP client's bearer file, for relay mcp"},
	{"GOGC", "", "Go's collector setting; when it or GOMEMLIMIT is set, the relay's collector is left as they say instead of tuned (core.TuneCollector: GOGC between 100 and 400, the heap at most 32 MiB past what is live, docs/server.md)"},
	{"GOMEMLIMIT", "", "Go's soft memory limit; when set, as GOGC, the collector is left as the runtime sets it"},
	{"GOMAXPROCS", "", "Go's count of threads running Go code at once; `relay mcp` runs on mcp.BridgeProcs (1) unless it is set, and, unlike the relay, with Go's own collector (docs/mcp.md)"},
}
