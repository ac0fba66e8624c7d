package extensionhost

// This file is http-get, the mediated fetch: every request and every redirect hop is checked
// against the descriptor's bounds.hosts and counted against its request budget, redirects are
// followed by hand (at most MaxRedirects), each request and the whole call have a deadline, the
// body is cut at the response bound, declared secrets go only to their own hosts, and what is
// logged or audited has its secrets scrubbed.

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/extensions"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// MaxRedirects is how many redirects one call follows.
const MaxRedirects = 5

// Budget counts one admitted descriptor's requests against its maxRequests. It is safe for
// concurrent use.
type Budget struct {
	mu   sync.Mutex
	used int
	max  int
}

// NewBudget returns a budget of max requests.
func NewBudget(max int) *Budget { return &Budget{max: max} }

// Take spends one request and says which it is, as the original does: "3/20" is the third of 20.
func (b *Budget) Take() (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used >= b.max {
		return "", &wire.BudgetError{
			Refusal: refusal.New(refusal.BudgetExhausted, "the extension's request budget is spent: %d of %d requests used", b.used, b.max),
			Budget:  wire.Budget{Used: int64(b.used), Max: int64(b.max)},
		}
	}
	b.used++
	return fmt.Sprintf("%d/%d", b.used, b.max), nil
}

// Spent says how much of the budget is spent, as "7/50".
func (b *Budget) Spent() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return fmt.Sprintf("%d/%d", b.used, b.max)
}

// FetchResult is the observation of a mediated fetch.
type FetchResult struct {
	Status    int    `json:"status"`
	Body      string `json:"body"`
	Truncated bool   `json:"truncated"`
	// Via is every URL the call requested, in order: the first, each redirect's target (a
	// relative Location resolved), and the one that served the body, redacted (see Redact).
	Via []string `json:"via"`
	// ServedBy is the URL that served the body, the last of Via.
	ServedBy string `json:"servedBy"`
	// Request is which request of the extension's budget served the body, such as "3/20"
	// (redirect hops count too).
	Request string `json:"request"`
}

// Fetcher performs mediated fetches. Client's own redirect following is disabled.
type Fetcher struct {
	Client *http.Client
	// Getenv reads the values of declared secrets; nil means os.Getenv. An empty value counts as
	// unset.
	Getenv func(string) string
	// RequestTimeout and CallTimeout bound one request and a whole call; zero means
	// extensions.FetchRequestTimeout and extensions.FetchCallTimeout (what plans disclose).
	RequestTimeout, CallTimeout time.Duration
}

// Fetch GETs rawURL for tool t (nil for none in particular) of descriptor d, spending from
// budget. Every request carries t's literal headers and the secrets d declares for its host (and
// those t's headers name), and only those; a secret that is not set refuses the call
// secret-unset before that request is sent. A request that outlives RequestTimeout, or a call
// that outlives CallTimeout, is refused fetch-timeout.
func (f *Fetcher) Fetch(ctx context.Context, d *extensions.Descriptor, t *extensions.Tool, rawURL string, budget *Budget) (*FetchResult, error) {
	client := http.Client{}
	if f.Client != nil {
		client = *f.Client
	}
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	getenv := f.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	perRequest := cmp.Or(f.RequestTimeout, extensions.FetchRequestTimeout)
	perCall := cmp.Or(f.CallTimeout, extensions.FetchCallTimeout)
	ctx, cancel := context.WithTimeout(ctx, perCall)
	defer cancel()
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, refusal.New(refusal.HostNotAllowed, "%s is not an http or https URL", Redact(rawURL))
	}
	if !slices.Contains(d.Bounds.Hosts, u.Host) && !slices.Contains(d.Bounds.Hosts, u.Hostname()) {
		return nil, refusal.New(refusal.HostNotAllowed, "%s is not among the hosts %s may reach (%s)", u.Host, d.ID, strings.Join(d.Bounds.Hosts, ", "))
	}
	var via []string
	for hop := 0; ; hop++ {
		headers, err := requestHeaders(d, t, u, getenv)
		if err != nil {
			return nil, err
		}
		request, err := budget.Take()
		if err != nil {
			return nil, err
		}
		res, next, err := f.hop(ctx, &client, d, u, headers, perRequest, perCall)
		if err != nil {
			return nil, err
		}
		via = append(via, Redact(u.String()))
		if next == nil {
			res.Via, res.ServedBy, res.Request = via, via[len(via)-1], request
			return res, nil
		}
		if hop >= MaxRedirects {
			return nil, refusal.New(refusal.TooManyRedirects, "more than %d redirects (via %s)", MaxRedirects, strings.Join(via, " -> "))
		}
		if !slices.Contains(d.Bounds.Hosts, next.Host) && !slices.Contains(d.Bounds.Hosts, next.Hostname()) || (next.Scheme != "http" && next.Scheme != "https") {
			return nil, refusal.New(refusal.RedirectHostNotAllowed, "a redirect led to %s, outside the hosts %s may reach (via %s)", Redact(next.String()), d.ID, strings.Join(via, " -> "))
		}
		u = next
	}
}

// hop sends one request to u and reads its answer within perRequest (and what is left of the
// call): a redirect returns the next URL, anything else the result.
func (f *Fetcher) hop(ctx context.Context, client *http.Client, d *extensions.Descriptor, u *url.URL, secrets http.Header, perRequest, perCall time.Duration) (*FetchResult, *url.URL, error) {
	callCtx := ctx
	ctx, cancel := context.WithTimeout(ctx, perRequest)
	defer cancel()
	timedOut := func() error {
		if callCtx.Err() != nil {
			return refusal.New(refusal.FetchTimeout, "the call to %s took longer than its bound of %s (every request and redirect together)", d.ID, perCall)
		}
		return refusal.New(refusal.FetchTimeout, "%s did not answer within a request's bound of %s", Redact(u.String()), perRequest)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, nil, refusal.New(refusal.FetchFailed, "the request to %s could not be made", Redact(u.String()))
	}
	maps.Copy(req.Header, secrets)
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, timedOut()
		}
		return nil, nil, refusal.New(refusal.FetchFailed, "the request to %s failed", Redact(u.String()))
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.Header.Get("Location") != "" {
		next, err := u.Parse(resp.Header.Get("Location"))
		if err != nil {
			return nil, nil, refusal.New(refusal.FetchFailed, "a redirect from %s named an unreadable location", Redact(u.String()))
		}
		return nil, next, nil
	}
	limit := extensions.ResponseBound(d.Bounds)
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, timedOut()
		}
		return nil, nil, refusal.New(refusal.FetchFailed, "reading the response from %s failed", Redact(u.String()))
	}
	res := &FetchResult{Status: resp.StatusCode}
	if len(body) > limit {
		body, res.Truncated = body[:limit], true
	}
	res.Body = string(body)
	return res, nil, nil
}

// requestHeaders returns the headers of a request of t to u: t's literal headers, then the
// secrets that go to u's host, with their values from the environment. A reserved variable is
// refused secret-reserved (the gate refuses such a descriptor; this is the second wall), an unset
// one secret-unset: nothing is sent either way.
func requestHeaders(d *extensions.Descriptor, t *extensions.Tool, u *url.URL, getenv func(string) string) (http.Header, error) {
	h := http.Header{}
	literal, secrets := extensions.RequestHeaders(d, t, u.Host, u.Hostname())
	for _, l := range literal {
		h.Set(l.Name, l.Value)
	}
	for _, s := range secrets {
		if extensions.SecretReserved(s.Name) {
			return nil, refusal.New(refusal.SecretReserved, "secret %s is one of the relay's own variables; it is never sent", s.Name)
		}
		v := getenv(s.Name)
		if v == "" {
			return nil, refusal.New(refusal.SecretUnset, "%s needs $%s for requests to %s, and the relay's environment does not set it; set it where the relay starts and start the relay again (nothing was sent)", d.ID, s.Name, u.Host)
		}
		h.Set(s.Header, s.Prefix+v)
	}
	return h, nil
}

var secretKeys = []string{"token", "key", "api_key", "apikey", "access_token", "secret", "password", "auth", "sig", "signature", "bearer"}

// Redact returns s, a URL, with the values of credential-like query parameters (and such pairs
// in its fragment) and any password in it replaced by [redacted]. A string that does not parse as a URL (a bad escape, a
// control character, an unclosed bracket) is scrubbed as text the same way, so it is never
// logged or answered as it came.
func Redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return redactText(s)
	}
	if _, hasPassword := u.User.Password(); hasPassword {
		u.User = url.UserPassword(u.User.Username(), "[redacted]")
	}
	if u.RawQuery != "" {
		u.RawQuery = redactPairs(u.RawQuery, "&")
	}
	if u.Fragment != "" {
		u.Fragment, u.RawFragment = redactPairs(u.Fragment, "&"), ""
	}
	return u.String()
}

// redactText scrubs a string that is not a URL: a user:password@ after the scheme, and the value
// of every credential-like key=value pair after the first '?' (pairs split at '&', ';' or '#').
func redactText(s string) string {
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		if at := strings.IndexByte(rest, '@'); at >= 0 && !strings.ContainsAny(rest[:at], "/?#") {
			rest = "[redacted]" + rest[at:]
		}
		s = scheme + "://" + rest
	}
	head, query, ok := strings.Cut(s, "?")
	if !ok {
		return s
	}
	query = strings.Map(func(r rune) rune {
		if r == ';' || r == '#' {
			return '&'
		}
		return r
	}, query)
	return head + "?" + redactPairs(query, "&")
}

// redactPairs replaces the value of each credential-like key=value pair of query, split at sep.
func redactPairs(query, sep string) string {
	parts := strings.Split(query, sep)
	for i, p := range parts {
		k, _, ok := strings.Cut(p, "=")
		if ok && isSecretKey(k) {
			parts[i] = k + "=[redacted]"
		}
	}
	return strings.Join(parts, sep)
}

func isSecretKey(k string) bool {
	k = strings.ToLower(k)
	for _, s := range secretKeys {
		if k == s || strings.HasSuffix(k, "_"+s) || strings.HasSuffix(k, "-"+s) {
			return true
		}
	}
	return false
}

// secretNames says which secrets a descriptor's requests may carry, by variable and header,
// never by value: what a log may show of them.
func secretNames(secrets []extensions.Secret) string {
	names := make([]string, len(secrets))
	for i, s := range secrets {
		names[i] = fmt.Sprintf("%s (from $%s)", s.Header, s.Name)
	}
	return strings.Join(names, ", ")
}

// baseTransport is the transport under the mediation: the Fetcher's client's, or a clone of
// http.DefaultTransport.
func (f *Fetcher) baseTransport() http.RoundTripper {
	if f != nil && f.Client != nil && f.Client.Transport != nil {
		return f.Client.Transport
	}
	return http.DefaultTransport.(*http.Transport).Clone()
}

func (f *Fetcher) requestTimeout() time.Duration {
	if f == nil {
		return extensions.FetchRequestTimeout
	}
	return cmp.Or(f.RequestTimeout, extensions.FetchRequestTimeout)
}
