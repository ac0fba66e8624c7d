package mcphost

// This file is the mediated fetch for a remote MCP extension's session: an http.RoundTripper
// that the official SDK's Streamable HTTP client transport sends every request through, so a
// session is held to the same bounds as http-get (declared hosts, the request budget, redirect
// checks, time bounds, response bounds, declared secrets, redaction).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/extensions"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// MCPStreamLifetime bounds the server's notification stream (the session's standalone GET):
// past it the stream is cut, and the SDK opens another, which spends a request of the budget.
// An endless stream thus ends the session once its budget is spent.
const MCPStreamLifetime = 10 * time.Minute

// mediatedTransport sends one remote MCP extension's requests. It is safe for concurrent use.
type mediatedTransport struct {
	d      *extensions.Descriptor
	budget Budget
	base   http.RoundTripper
	// headers returns the secrets the descriptor declares for a URL's host, and nothing else of
	// the relay's (Config.Headers).
	headers func(u *url.URL) (http.Header, error)
	// maxRedirects is how many redirects a request follows (Config.MaxRedirects).
	maxRedirects int
	// redact scrubs a URL of its credentials for what is logged and answered (Config.Redact).
	redact func(string) string
	// requestTimeout bounds every request but the notification stream, from sending it to the
	// last byte of its body.
	requestTimeout time.Duration
	// log, when set, hears every request: its method, redacted URL, which request of the budget
	// it was, and the refusal or failure that ended it.
	log func(method, url, request string, err error)
	// last is the last refusal the transport made: the SDK reports a transport's failure in its
	// own words, so a call reads the rule here.
	last atomic.Pointer[refusal.Refusal]
}

// refuse records r as the transport's last refusal and returns it.
func (m *mediatedTransport) refuse(r *refusal.Refusal) error {
	m.last.Store(r)
	return r
}

// RoundTrip sends req if its host is one of the descriptor's hosts and the budget has a request
// left, with the secrets declared for that host and nothing else of the relay's.
func (m *mediatedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	u := req.URL
	sent := false
	defer func() {
		if !sent && req.Body != nil {
			req.Body.Close() // a RoundTripper closes the body, even when it refuses
		}
	}()
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, m.refuse(refusal.New(refusal.HostNotAllowed, "%s is not an http or https URL", m.redact(u.String())))
	}
	if !slices.Contains(m.d.Bounds.Hosts, u.Host) && !slices.Contains(m.d.Bounds.Hosts, u.Hostname()) {
		return nil, m.refuse(refusal.New(refusal.HostNotAllowed, "%s is not among the hosts %s may reach (%s)", u.Host, m.d.ID, strings.Join(m.d.Bounds.Hosts, ", ")))
	}
	headers, err := m.headers(u)
	if err != nil {
		r, _ := refusal.As(err)
		return nil, m.refuse(r)
	}
	request, err := m.budget.Take()
	if err != nil {
		r, _ := refusal.As(err)
		m.logf(req.Method, u.String(), "", r)
		return nil, m.refuse(r)
	}
	bound := m.requestTimeout
	if req.Method == http.MethodGet {
		bound = MCPStreamLifetime
	}
	ctx, cancel := context.WithTimeout(req.Context(), bound)
	out := req.Clone(ctx)
	for k, v := range headers {
		out.Header[k] = v
	}
	sent = true
	resp, err := m.base.RoundTrip(out)
	if err != nil {
		cancel()
		if ctx.Err() != nil && req.Context().Err() == nil {
			err = m.refuse(refusal.New(refusal.FetchTimeout, "%s did not answer within a request's bound of %s", m.redact(u.String()), bound))
		} else {
			err = m.refuse(refusal.New(refusal.FetchFailed, "the request to %s failed", m.redact(u.String())))
		}
		m.logf(req.Method, u.String(), request, err)
		return nil, err
	}
	m.logf(req.Method, u.String(), request, nil)
	resp.Body = &boundedBody{rc: resp.Body, left: int64(extensions.ResponseBound(m.d.Bounds)), cancel: cancel, t: m, url: u.String(), ctx: ctx, parent: req.Context(), bound: bound}
	switch mediaType(resp.Header.Get("Content-Type")) {
	case "application/json":
		resp.Body = &depthCap{rc: resp.Body}
	case "text/event-stream":
		resp.Body = &depthCap{rc: resp.Body, sse: true}
	}
	return resp, nil
}

func mediaType(contentType string) string {
	t, _, _ := strings.Cut(contentType, ";")
	return strings.ToLower(strings.TrimSpace(t))
}

// MaxMCPMessageDepth bounds how deep a server's JSON-RPC message nests: an object or array
// deeper is replaced, as it streams in, by the string deepValue. Go's JSON decoder refuses a whole
// document past 10,000 levels, so without the cut one over-deep tool schema (or result) would
// make the whole listing, and the session, unreadable; with it that tool alone is refused.
const MaxMCPMessageDepth = 128

// deepValue is what stands for a value cut at MaxMCPMessageDepth.
var deepValue = []byte(fmt.Sprintf(`"(cut by the relay: nested deeper than %d levels)"`, MaxMCPMessageDepth))

// depthCap is a server's response body (JSON, or an event stream of JSON data lines) with every
// value nested deeper than MaxMCPMessageDepth replaced by deepValue. It keeps a few counters, not
// the document: its memory does not grow with what it reads.
type depthCap struct {
	rc  io.ReadCloser
	sse bool
	buf [4096]byte
	out []byte // what is read and transformed but not yet returned

	depth, skipFrom             int
	inString, escaped, skipping bool
	// An event stream's line: its field name is read first (field); only data lines are JSON.
	lineStart, dataLine bool
	field               []byte
	started             bool
}

func (d *depthCap) Read(p []byte) (int, error) {
	if !d.started {
		d.started, d.lineStart = true, true
	}
	for len(d.out) == 0 {
		n, err := d.rc.Read(d.buf[:min(len(p), len(d.buf))])
		for _, b := range d.buf[:n] {
			d.step(b)
		}
		if err != nil {
			if len(d.out) == 0 {
				return 0, err
			}
			break
		}
		if n == 0 {
			return 0, nil
		}
	}
	n := copy(p, d.out)
	d.out = d.out[n:]
	return n, nil
}

// step reads one byte of the body.
func (d *depthCap) step(b byte) {
	if !d.sse {
		d.json(b)
		return
	}
	switch {
	case b == '\n' || b == '\r':
		if d.lineStart && len(d.field) == 0 && b == '\n' {
			d.depth, d.inString, d.escaped, d.skipping = 0, false, false, false // a blank line ends the event
		}
		d.out = append(d.out, d.field...)
		d.field = d.field[:0]
		d.out = append(d.out, b)
		d.lineStart, d.dataLine = true, false
	case d.lineStart:
		d.field = append(d.field, b)
		switch f := string(d.field); {
		case f == "data:":
			d.out = append(d.out, d.field...)
			d.field, d.lineStart, d.dataLine = d.field[:0], false, true
		case !strings.HasPrefix("data:", f):
			d.out = append(d.out, d.field...)
			d.field, d.lineStart = d.field[:0], false
		}
	case d.dataLine:
		d.json(b)
	default:
		d.out = append(d.out, b)
	}
}

// json reads one byte of a JSON document: past MaxMCPMessageDepth an object or array is dropped
// to its end, deepValue written in its place.
func (d *depthCap) json(b byte) {
	if d.inString {
		switch {
		case d.escaped:
			d.escaped = false
		case b == '\\':
			d.escaped = true
		case b == '"':
			d.inString = false
		}
		if !d.skipping {
			d.out = append(d.out, b)
		}
		return
	}
	switch b {
	case '"':
		d.inString = true
	case '{', '[':
		if !d.skipping && d.depth >= MaxMCPMessageDepth {
			d.skipping, d.skipFrom = true, d.depth
			d.out = append(d.out, deepValue...)
		}
		d.depth++
	case '}', ']':
		if d.depth > 0 {
			d.depth--
		}
		if d.skipping && d.depth == d.skipFrom {
			d.skipping = false
			return
		}
	}
	if !d.skipping {
		d.out = append(d.out, b)
	}
}

func (d *depthCap) Close() error { return d.rc.Close() }

func (m *mediatedTransport) logf(method, url, request string, err error) {
	if m.log != nil {
		m.log(method, m.redact(url), request, err)
	}
}

// boundedBody is a response body cut at the descriptor's response bound: a body that goes on is
// an error the SDK sees (tool-output-over-budget), never a buffer that grows.
type boundedBody struct {
	rc          io.ReadCloser
	left        int64
	cancel      context.CancelFunc
	t           *mediatedTransport
	url         string
	ctx, parent context.Context
	bound       time.Duration
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, b.t.refuse(refusal.New(refusal.ToolOutputOverBudget, "the response from %s is over %s's response bound of %d bytes", b.t.redact(b.url), b.t.d.ID, extensions.ResponseBound(b.t.d.Bounds)))
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if err != nil && !errors.Is(err, io.EOF) && b.ctx.Err() != nil && b.parent.Err() == nil {
		err = b.t.refuse(refusal.New(refusal.FetchTimeout, "%s did not finish its answer within a request's bound of %s", b.t.redact(b.url), b.bound))
	}
	return n, err
}

func (b *boundedBody) Close() error {
	b.cancel()
	return b.rc.Close()
}

// mediatedClient returns the HTTP client of d's session: its transport is the mediated fetch over
// base, and redirects are followed only to d's hosts, at most Config.MaxRedirects.
func mediatedClient(t *mediatedTransport) *http.Client {
	return &http.Client{
		Transport: t,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > t.maxRedirects {
				return t.refuse(refusal.New(refusal.TooManyRedirects, "more than %d redirects (from %s)", t.maxRedirects, t.redact(via[0].URL.String())))
			}
			u := req.URL
			if !slices.Contains(t.d.Bounds.Hosts, u.Host) && !slices.Contains(t.d.Bounds.Hosts, u.Hostname()) || (u.Scheme != "http" && u.Scheme != "https") {
				return t.refuse(refusal.New(refusal.RedirectHostNotAllowed, "a redirect led to %s, outside the hosts %s may reach", t.redact(u.String()), t.d.ID))
			}
			return nil
		},
	}
}
