// Package checkapp is `relay check-app URL`: it fetches an external mini-app's address and says which
// of the headers an embeddable app must send are missing. Without them the app's panel stays blank
// and the embedding page's console says nothing, so this is the first thing to rule out.
//
// The headers, for a page at HOST:
//
//	Content-Security-Policy: frame-ancestors 'self' HOST   (HOST may embed the app)
//	Cross-Origin-Embedder-Policy: credentialless
//	Cross-Origin-Resource-Policy: cross-origin
package checkapp

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// fetchBound bounds the whole fetch, redirects included.
const fetchBound = 15 * time.Second

// Finding is the verdict on one header.
type Finding struct {
	Header string // the header's name
	Want   string // what it should say
	OK     bool
	Say    string // what was found, in a sentence
}

// Flags is the command's flag set: --host, whose default defaultSays describes (Main fills it in
// when --host is not given).
func Flags(stderr io.Writer, defaultSays string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("check-app", flag.ContinueOnError)
	fs.SetOutput(stderr)
	host := fs.String("host", "", "the `origin` the page embedding the app is opened at (default "+defaultSays+")")
	return fs, host
}

// Main runs the command: check-app [--host ORIGIN] URL. defaultHost is the page's origin when
// --host is not given. It exits 0 when every header is right, 1 when one is missing or wrong,
// and 2 when the URL could not be checked at all.
func Main(args []string, stdout, stderr io.Writer, defaultHost string) int {
	fs, host := Flags(stderr, defaultHost)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: relay check-app [--host ORIGIN] URL\n\nFetches URL and says which embedding headers it lacks.\n\n")
		fs.PrintDefaults()
	}
	// The URL may come before the flags, as people type it.
	var target string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		target, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	switch {
	case target == "" && fs.NArg() == 1:
		target = fs.Arg(0)
	case fs.NArg() > 0:
		target = ""
	}
	if target == "" {
		fs.Usage()
		return 2
	}
	if *host == "" {
		*host = defaultHost
	}
	hostOrigin, err := origin(*host)
	if err != nil {
		fmt.Fprintf(stderr, "relay check-app: --host: %v\n", err)
		return 2
	}
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fmt.Fprintf(stderr, "relay check-app: %q is not an http or https address\n", target)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), fetchBound)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	// A frame's request is a navigation; say so, as a browser would.
	req.Header.Set("Sec-Fetch-Dest", "iframe")
	req.Header.Set("Sec-Fetch-Mode", "navigate")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "relay check-app: could not fetch %s: %v\n", u, err)
		return 2
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	final := resp.Request.URL
	fmt.Fprintf(stdout, "%s answered %d", u, resp.StatusCode)
	if final.String() != u.String() {
		fmt.Fprintf(stdout, " (after redirects, from %s)", final)
	}
	fmt.Fprintf(stdout, "; embedding it in %s:\n", hostOrigin)
	findings := Check(resp.Header, final, hostOrigin)
	bad := 0
	for _, f := range findings {
		mark := "ok     "
		if !f.OK {
			mark = "MISSING"
			bad++
		}
		fmt.Fprintf(stdout, "  %s %s: %s\n", mark, f.Header, f.Say)
	}
	if resp.StatusCode >= 400 {
		fmt.Fprintf(stdout, "note: the app answered %d; a frame shows that error page.\n", resp.StatusCode)
	}
	if bad > 0 {
		fmt.Fprintf(stdout, "%d of %d embedding headers missing or wrong: the app's panel would stay blank, with nothing in the page's console.\n", bad, len(findings))
		return 1
	}
	fmt.Fprintf(stdout, "every embedding header is there.\n")
	return 0
}

// Check judges the headers of the response for the app at appURL, to be embedded by a page at
// host (an origin).
func Check(h http.Header, appURL *url.URL, host string) []Finding {
	return []Finding{
		frameAncestors(h, appURL, host),
		exact(h, "Cross-Origin-Embedder-Policy", "credentialless"),
		exact(h, "Cross-Origin-Resource-Policy", "cross-origin"),
	}
}

func exact(h http.Header, name, want string) Finding {
	f := Finding{Header: name, Want: want}
	got := h.Values(name)
	switch {
	case len(got) == 0:
		f.Say = "absent; send " + name + ": " + want
	case len(got) > 1:
		f.Say = fmt.Sprintf("sent %d times (%s); send it once, as %s", len(got), strings.Join(got, ", "), want)
	case !strings.EqualFold(strings.TrimSpace(got[0]), want):
		f.Say = fmt.Sprintf("is %q; it must be %q", got[0], want)
	default:
		f.OK = true
		f.Say = want
	}
	return f
}

// frameAncestors checks that every enforced policy's frame-ancestors admits host. A policy without
// the directive admits any ancestor, but then nothing names the host and X-Frame-Options (when
// sent) decides; the guide asks for the directive, so its absence is reported.
func frameAncestors(h http.Header, appURL *url.URL, host string) Finding {
	f := Finding{Header: "Content-Security-Policy", Want: "frame-ancestors 'self' " + host}
	var found []string
	for _, header := range h.Values("Content-Security-Policy") {
		for policy := range strings.SplitSeq(header, ",") {
			for directive := range strings.SplitSeq(policy, ";") {
				fields := strings.Fields(directive)
				if len(fields) > 0 && strings.EqualFold(fields[0], "frame-ancestors") {
					found = append(found, strings.Join(fields[1:], " "))
				}
			}
		}
	}
	if len(found) == 0 {
		f.Say = "has no frame-ancestors directive; send Content-Security-Policy: frame-ancestors 'self' " + host
		if xfo := h.Get("X-Frame-Options"); xfo != "" {
			f.Say += fmt.Sprintf(" (X-Frame-Options: %s alone forbids other sites from framing the app)", xfo)
		}
		return f
	}
	for _, sources := range found {
		if !admits(strings.Fields(sources), appURL, host) {
			f.Say = fmt.Sprintf("frame-ancestors %s does not name %s; add it", orNone(sources), host)
			return f
		}
	}
	f.OK = true
	f.Say = "frame-ancestors " + strings.Join(found, "; ") + " admits " + host
	return f
}

func orNone(s string) string {
	if s == "" {
		return "(empty, the same as 'none')"
	}
	return s
}

// admits reports whether a frame-ancestors source list matches the origin host, following CSP's
// source matching: *, 'self', scheme sources, and host sources with an optional scheme, a
// leading *. wildcard and a port (or *). An insecure scheme in a source also admits its secure
// counterpart, as browsers do.
func admits(sources []string, appURL *url.URL, host string) bool {
	h, err := url.Parse(host)
	if err != nil {
		return false
	}
	for _, s := range sources {
		ls := strings.ToLower(s)
		switch {
		case ls == "'none'":
			continue
		case ls == "*":
			if h.Scheme == "http" || h.Scheme == "https" {
				return true
			}
		case ls == "'self'":
			if sameOrigin(appURL, h) {
				return true
			}
		case strings.HasSuffix(ls, ":") && !strings.Contains(ls, "/"):
			if schemeMatches(strings.TrimSuffix(ls, ":"), h.Scheme) {
				return true
			}
		case !strings.HasPrefix(ls, "'"):
			if hostSourceMatches(ls, appURL, h) {
				return true
			}
		}
	}
	return false
}

func schemeMatches(source, scheme string) bool {
	return source == scheme || (source == "http" && scheme == "https") || (source == "ws" && scheme == "wss")
}

func hostSourceMatches(source string, appURL, h *url.URL) bool {
	scheme := ""
	if i := strings.Index(source, "://"); i >= 0 {
		scheme, source = source[:i], source[i+3:]
	}
	if i := strings.IndexByte(source, '/'); i >= 0 {
		source = source[:i] // a path never restricts frame-ancestors
	}
	if scheme == "" {
		scheme = appURL.Scheme
	}
	if !schemeMatches(scheme, h.Scheme) {
		return false
	}
	hostPart, port := source, ""
	if i := strings.LastIndexByte(source, ':'); i >= 0 && !strings.HasSuffix(source, "]") {
		hostPart, port = source[:i], source[i+1:]
	}
	want := strings.ToLower(h.Hostname())
	switch {
	case strings.HasPrefix(hostPart, "*."):
		if !strings.HasSuffix(want, hostPart[1:]) {
			return false
		}
	case hostPart != want && hostPart != "["+want+"]":
		return false
	}
	if port == "*" {
		return true
	}
	if port == "" {
		port = defaultPort(scheme)
		// A source without a port written for http also admits the https default port.
		return effectivePort(h) == port || (scheme == "http" && h.Scheme == "https" && effectivePort(h) == "443")
	}
	return effectivePort(h) == port
}

func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && effectivePort(a) == effectivePort(b)
}

func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	return defaultPort(u.Scheme)
}

func defaultPort(scheme string) string {
	if scheme == "https" || scheme == "wss" {
		return "443"
	}
	return "80"
}

// origin checks --host: scheme://host[:port].
func origin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return "", fmt.Errorf("%q is not an origin (scheme://host[:port])", s)
	}
	return u.Scheme + "://" + strings.ToLower(u.Host), nil
}
