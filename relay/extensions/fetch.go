// Package extensions runs admitted extensions' relay-side primitives. This file is http-get, the
// mediated fetch: every request and every redirect hop is checked against the descriptor's
// bounds.hosts and counted against its request budget, redirects are followed by hand (at most
// MaxRedirects), the body is cut at the response bound, and what is logged or audited has its
// secrets scrubbed.
package extensions

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/voicebox-go/voicebox/shared/extensions"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/wire"
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

func (b *Budget) take() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used >= b.max {
		return &wire.BudgetError{
			Refusal: refusal.New(refusal.BudgetExhausted, "the extension's request budget is spent: %d of %d requests used", b.used, b.max),
			Budget:  wire.Budget{Used: int64(b.used), Max: int64(b.max)},
		}
	}
	b.used++
	return nil
}

// FetchResult is the observation of a mediated fetch.
type FetchResult struct {
	Status    int      `json:"status"`
	Body      string   `json:"body"`
	Truncated bool     `json:"truncated"`
	Via       []string `json:"via"`
	ServedBy  string   `json:"servedBy"`
}

// Fetcher performs mediated fetches. Client's own redirect following is disabled.
type Fetcher struct {
	Client *http.Client
	Getenv func(string) string
}

// Fetch GETs rawURL for descriptor d and tool t, spending from budget.
func (f *Fetcher) Fetch(ctx context.Context, d *extensions.Descriptor, t extensions.Tool, rawURL string, budget *Budget) (*FetchResult, error) {
	client := http.Client{}
	if f.Client != nil {
		client = *f.Client
	}
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	getenv := f.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, refusal.New(refusal.HostNotAllowed, "%s is not an http or https URL", Redact(rawURL))
	}
	if !slices.Contains(d.Bounds.Hosts, u.Host) && !slices.Contains(d.Bounds.Hosts, u.Hostname()) {
		return nil, refusal.New(refusal.HostNotAllowed, "%s is not among the hosts %s may reach (%s)", u.Host, d.ID, strings.Join(d.Bounds.Hosts, ", "))
	}
	var via []string
	for hop := 0; ; hop++ {
		if err := budget.take(); err != nil {
			return nil, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, refusal.New(refusal.FetchFailed, "the request to %s could not be made", Redact(u.String()))
		}
		for _, h := range t.Headers {
			req.Header.Set(h.Name, getenv(h.Env))
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, refusal.New(refusal.FetchFailed, "the request to %s failed", Redact(u.String()))
		}
		if resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.Header.Get("Location") != "" {
			resp.Body.Close()
			via = append(via, Redact(u.String()))
			if hop >= MaxRedirects {
				return nil, refusal.New(refusal.TooManyRedirects, "more than %d redirects (via %s)", MaxRedirects, strings.Join(via, " -> "))
			}
			next, err := u.Parse(resp.Header.Get("Location"))
			if err != nil {
				return nil, refusal.New(refusal.FetchFailed, "a redirect from %s named an unreadable location", Redact(u.String()))
			}
			if !slices.Contains(d.Bounds.Hosts, next.Host) && !slices.Contains(d.Bounds.Hosts, next.Hostname()) || (next.Scheme != "http" && next.Scheme != "https") {
				return nil, refusal.New(refusal.RedirectHostNotAllowed, "a redirect led to %s, outside the hosts %s may reach (via %s)", Redact(next.String()), d.ID, strings.Join(via, " -> "))
			}
			u = next
			continue
		}
		defer resp.Body.Close()
		limit := extensions.ResponseBound(d.Bounds)
		body, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
		if err != nil {
			return nil, refusal.New(refusal.FetchFailed, "reading the response from %s failed", Redact(u.String()))
		}
		res := &FetchResult{Status: resp.StatusCode, Via: via, ServedBy: u.Scheme + "://" + u.Host}
		if len(body) > limit {
			body, res.Truncated = body[:limit], true
		}
		if res.Via == nil {
			res.Via = []string{}
		}
		res.Body = string(body)
		return res, nil
	}
}

var secretKeys = []string{"token", "key", "api_key", "apikey", "access_token", "secret", "password", "auth", "sig", "signature", "bearer"}

// Redact returns s, a URL, with the values of credential-like query parameters replaced by
// [redacted]. A string that is not a URL is returned with any such key=value pair scrubbed.
func Redact(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.RawQuery == "" {
		return s
	}
	parts := strings.Split(u.RawQuery, "&")
	for i, p := range parts {
		k, _, ok := strings.Cut(p, "=")
		if ok && isSecretKey(k) {
			parts[i] = k + "=[redacted]"
		}
	}
	u.RawQuery = strings.Join(parts, "&")
	return u.String()
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

// HeaderNames returns the names of t's environment headers, what a log may show of them.
func HeaderNames(t extensions.Tool) string {
	names := make([]string, len(t.Headers))
	for i, h := range t.Headers {
		names[i] = fmt.Sprintf("%s (from $%s)", h.Name, h.Env)
	}
	return strings.Join(names, ", ")
}
