package extensions

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Secret is a value a network extension sends with its requests, declared in bounds.secrets:
// the environment variable of the relay that holds it (Name), the request header it fills
// (Header, with Prefix before the value, such as "Bearer "), and the hosts it may go to (Hosts,
// each among bounds.hosts). The relay sends it only on requests, redirect hops included, to one of
// those hosts, and never sends an empty header: a secret that is not set is refused secret-unset
// at call time.
//
// The original Voicebox's form declares a secret in an http-get tool's params.headers instead:
// {"X-Subscription-Token": "$BRAVE_API_KEY"}. That is the same Secret (Name BRAVE_API_KEY, Header
// X-Subscription-Token, Hosts every host of bounds.hosts), sent with that tool's requests only,
// under the same rules.
//
// The set of secrets is part of the descriptor, so it is part of the plan a person admits (hash
// included): a descriptor whose secrets change needs admission again.
type Secret struct {
	Name   string   `json:"name"`
	Header string   `json:"header"`
	Prefix string   `json:"prefix,omitempty"`
	Hosts  []string `json:"hosts"`
}

// Bounds of declared secrets.
const (
	// MaxSecrets bounds the secrets one descriptor declares.
	MaxSecrets = 8
	// MaxSecretPrefixBytes bounds a secret's Prefix.
	MaxSecretPrefixBytes = 32
)

// ReservedSecrets are the environment variables no descriptor may name as a secret, refused
// secret-reserved at the gate (and again by the relay's fetch, should one get past it): the
// relay's own keys and settings, what its runtime reads, and where its user's files are.
//
//   - the vendor keys of live voice (OPENAI_API_KEY, GEMINI_API_KEY) and the external mini-app
//     registry (MINI_APPS, which holds each app's JWT signing secret);
//   - PORT, LIVE_PROVIDER, and every VOICEBOX_* variable (ReservedSecretPrefixes);
//   - the paths of the relay's user and state (HOME, PWD, TMPDIR, XDG_* and the like, and the
//     service manager's CREDENTIALS_DIRECTORY);
//   - what Go's runtime and HTTP client read (GODEBUG, GOGC, ..., HTTP_PROXY, SSL_CERT_FILE, ...),
//     since a proxy URL may carry a password.
//
// The relay's other secrets (the host token, session and ticket secrets, pairing bearers, stored
// vendor keys, everything in the state directory) live in files and memory, never in the
// environment, and the fetch reads nothing but the environment: no descriptor can name them.
var ReservedSecrets = []string{
	"OPENAI_API_KEY", "GEMINI_API_KEY", "MINI_APPS", "PORT", "LIVE_PROVIDER",
	"HOME", "USER", "LOGNAME", "PWD", "OLDPWD", "PATH", "SHELL", "TMPDIR", "MAIL",
	"CREDENTIALS_DIRECTORY", "NOTIFY_SOCKET", "SSH_AUTH_SOCK",
	"GODEBUG", "GOGC", "GOMAXPROCS", "GOMEMLIMIT", "GOTRACEBACK", "GOROOT", "GOPATH",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
	"SSL_CERT_FILE", "SSL_CERT_DIR",
}

// ReservedSecretPrefixes start the names of reserved variables too: every setting of the relay
// (VOICEBOX_) and the user's base directories (XDG_).
var ReservedSecretPrefixes = []string{"VOICEBOX_", "XDG_"}

// SecretReserved reports whether name is an environment variable no descriptor may declare as a
// secret (see ReservedSecrets).
func SecretReserved(name string) bool {
	if slices.Contains(ReservedSecrets, name) {
		return true
	}
	for _, p := range ReservedSecretPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

var (
	secretName = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)
	headerName = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$")
)

// forbiddenHeaders are the request headers a secret may not fill: the transport owns them, and
// filling them would change where or how the request goes rather than what it proves.
var forbiddenHeaders = []string{
	"host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te",
	"trailer", "proxy-authorization", "proxy-connection", "expect",
}

// checkSecrets is what Parse checks of the declared secrets: their shape, not what they name.
func checkSecrets(ss []Secret) *refusal.Refusal {
	if len(ss) > MaxSecrets {
		return refusal.New(refusal.BadDescriptor, "a descriptor declares at most %d secrets; this one declares %d", MaxSecrets, len(ss))
	}
	headers := map[string]bool{}
	for _, s := range ss {
		if !secretName.MatchString(s.Name) {
			return refusal.New(refusal.BadDescriptor, "a secret names an environment variable: 1 to 64 upper-case letters, digits or '_', starting with a letter, not %q", clip(s.Name))
		}
		if !headerName.MatchString(s.Header) || slices.Contains(forbiddenHeaders, strings.ToLower(s.Header)) {
			return refusal.New(refusal.BadDescriptor, "secret %s fills header %q, which is not a header name a secret may fill", s.Name, clip(s.Header))
		}
		if headers[strings.ToLower(s.Header)] {
			return refusal.New(refusal.BadDescriptor, "two secrets fill the header %s; each header takes one secret", s.Header)
		}
		headers[strings.ToLower(s.Header)] = true
		if len(s.Prefix) > MaxSecretPrefixBytes || strings.ContainsFunc(s.Prefix, func(c rune) bool { return c < ' ' || c > '~' || c == '$' }) {
			return refusal.New(refusal.BadDescriptor, "secret %s has a prefix of at most %d printable ASCII characters without '$'", s.Name, MaxSecretPrefixBytes)
		}
		if len(s.Hosts) == 0 {
			return refusal.New(refusal.BadDescriptor, "secret %s names no hosts; say which hosts it may be sent to", s.Name)
		}
	}
	return nil
}

// checkHeaderSecrets is what Parse checks of the secrets tools name in their headers, with
// bounds.secrets: at most MaxSecrets in all, and one secret per header on any request.
func checkHeaderSecrets(d *Descriptor) *refusal.Refusal {
	if n := len(AllSecrets(d)); n > MaxSecrets {
		return refusal.New(refusal.BadDescriptor, "a descriptor declares at most %d secrets; this one declares %d", MaxSecrets, n)
	}
	for i := range d.Tools {
		for _, h := range d.Tools[i].Headers() {
			for _, s := range d.Bounds.Secrets {
				if strings.EqualFold(s.Header, h.Name) {
					return refusal.New(refusal.BadDescriptor, "tool %s fills header %s, which bounds.secrets fills with %s too; each header takes one value", d.Tools[i].Name, h.Name, s.Name)
				}
			}
		}
	}
	return nil
}

// toolSecrets returns the secrets t's params.headers name, each going to every host of b.
func toolSecrets(t *Tool, b Bounds) []Secret {
	var out []Secret
	for _, h := range t.Headers() {
		if h.Secret != "" {
			out = append(out, Secret{Name: h.Secret, Header: h.Name, Prefix: h.Prefix, Hosts: b.Hosts})
		}
	}
	return out
}

// AllSecrets returns every secret d declares: bounds.secrets, then those its tools' headers name.
func AllSecrets(d *Descriptor) []Secret {
	out := slices.Clone(d.Bounds.Secrets)
	for i := range d.Tools {
		out = append(out, toolSecrets(&d.Tools[i], d.Bounds)...)
	}
	return out
}

// RequestHeaders returns what a request of tool t (nil for none in particular) of d to host
// (with its port, if it has one) carries: the literal headers of t's params.headers, and the
// secrets that go to that host, those of bounds.secrets and those t's headers name, in that
// order.
func RequestHeaders(d *Descriptor, t *Tool, host, hostname string) (literal []ToolHeader, secrets []Secret) {
	secrets = SecretsFor(d.Bounds, host, hostname)
	if t == nil {
		return nil, secrets
	}
	for _, h := range t.Headers() {
		if h.Secret == "" {
			literal = append(literal, h)
		}
	}
	for _, s := range toolSecrets(t, d.Bounds) {
		if slices.Contains(s.Hosts, host) || slices.Contains(s.Hosts, hostname) {
			secrets = append(secrets, s)
		}
	}
	return literal, secrets
}

// admitSecrets is the gate's secret-reserved rule: no declared secret names one of the relay's own.
func admitSecrets(d *Descriptor) *refusal.Refusal {
	for _, s := range AllSecrets(d) {
		if SecretReserved(s.Name) {
			return refusal.New(refusal.SecretReserved, "secret %s is one of the relay's own variables (its keys, settings, paths and runtime settings never go to an extension); put the extension's key in a variable that holds only that key", s.Name)
		}
	}
	return nil
}

// underDeclaredSecret is the gate's under-declared rule for secrets: a secret goes only with
// the requests of a network extension, to hosts it may reach.
func underDeclaredSecret(d *Descriptor, network bool) *refusal.Refusal {
	for _, s := range d.Bounds.Secrets {
		if !network {
			return refusal.New(refusal.UnderDeclared, "secret %s is sent with requests, so the descriptor must declare the network capability", s.Name)
		}
		for _, h := range s.Hosts {
			if !slices.Contains(d.Bounds.Hosts, h) {
				return refusal.New(refusal.UnderDeclared, "secret %s may go to %s, which is not among bounds.hosts (%s)", s.Name, clip(h), strings.Join(d.Bounds.Hosts, ", "))
			}
		}
	}
	return nil
}

// SecretsFor returns the secrets of b that go to host (a URL's host, with its port if it has
// one), in declaration order.
func SecretsFor(b Bounds, host, hostname string) []Secret {
	var out []Secret
	for _, s := range b.Secrets {
		if slices.Contains(s.Hosts, host) || slices.Contains(s.Hosts, hostname) {
			out = append(out, s)
		}
	}
	return out
}

// SecretDisclosure is one declared secret as a plan discloses it.
type SecretDisclosure struct {
	Secret
	// Tools are the http-get tools whose requests may carry it, with their URL templates.
	Tools []ToolURL `json:"tools"`
	// Says is the disclosure in words, such as "sends $BRAVE_API_KEY in X-Subscription-Token to
	// api.search.brave.com".
	Says string `json:"says"`
}

// ToolURL is an http-get tool's name and URL template.
type ToolURL struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

// discloseSecrets says what each declared secret is sent with: a secret of bounds.secrets with
// the requests of every http-get tool, one a tool's header names with that tool's only.
func discloseSecrets(d *Descriptor) []SecretDisclosure {
	var out []SecretDisclosure
	disclose := func(s Secret, tools []*Tool) {
		sd := SecretDisclosure{Secret: s, Tools: []ToolURL{}}
		var urls []string
		for _, t := range tools {
			u := t.URL
			if b := t.Bound(); u == "" && b != nil && b.URL != nil {
				u = *b.URL
			}
			if u == "" {
				u = "a URL the model names"
			}
			sd.Tools = append(sd.Tools, ToolURL{t.Name, u})
			urls = append(urls, t.Name+": "+u)
		}
		value := "$" + s.Name
		if s.Prefix != "" {
			value = fmt.Sprintf("%q followed by $%s", s.Prefix, s.Name)
		}
		sd.Says = fmt.Sprintf("sends %s in %s to %s", value, s.Header, strings.Join(s.Hosts, ", "))
		if len(urls) > 0 {
			sd.Says += " (with the requests of " + strings.Join(urls, "; ") + ")"
		}
		if d.MCP != nil {
			sd.Says += " (with every request of the MCP session with " + d.MCP.URL + ")"
		}
		out = append(out, sd)
	}
	var fetching []*Tool
	for i := range d.Tools {
		if d.Tools[i].Primitive == HTTPGet {
			fetching = append(fetching, &d.Tools[i])
		}
	}
	for _, s := range d.Bounds.Secrets {
		disclose(s, fetching)
	}
	for i := range d.Tools {
		for _, s := range toolSecrets(&d.Tools[i], d.Bounds) {
			disclose(s, []*Tool{&d.Tools[i]})
		}
	}
	return out
}
