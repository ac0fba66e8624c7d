// Package server is the relay's HTTP side: it serves the page's files (embedded or a directory),
// answers the JSON API, and puts the security headers on every response.
//
// Every route answers JSON on failure: an unknown route is 404 {"ok":false,"refused":"not-found"},
// and a handler that panics answers 500 {"ok":false,"refused":"internal-error"} while the server
// keeps serving.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Config says what the server serves. The zero value is not usable: Files must be set, or Public
// name a directory.
type Config struct {
	// Public is the directory the page is served from (index.html, the worker, voicebox.wasm and
	// its precompressed copies), when Files is nil.
	Public string
	// Files, when set, are the page's files instead of Public's (the relay's embedded page,
	// package public).
	Files fs.FS
	// Build is the version string /api/health reports.
	Build string
	// Log receives request failures and recovered panics; nil means slog.Default().
	Log *slog.Logger
	// HostToken reports whether a value is the host token (see RequireHostToken); with the gate
	// on, a request carrying it passes. Nil accepts none.
	HostToken func(string) bool
	// Gate, when set, is the loopback gate in front of every route but /api/health and /channel.
	// Nil leaves the page and the API open to every local process.
	Gate *Gate
	// Origin is the public origin the page is opened at (scheme://host[:port], see ParseOrigin).
	// The page's routes, /channel and /live admit it besides the relay's own loopback origin.
	// Empty admits only loopback. Setting it to an origin the host does not control lets that
	// origin's pages use the relay with the user's session.
	Origin string
	// HSTS, when set, puts Strict-Transport-Security on every answer to a request that came over
	// TLS (see HTTPS).
	HSTS bool
	// TrustedProxies are the peers whose forwarding headers (Forwarded, X-Forwarded-For,
	// X-Forwarded-Proto, X-Request-Id) are believed; from any other peer they are ignored. Empty
	// trusts none. A prefix that holds an address the public can connect from lets anyone claim
	// any client address and https.
	TrustedProxies []netip.Prefix
	// BootstrapBase is what the addresses of minted tickets start with (POST /api/bootstrap):
	// the public origin, else the address the relay listens on. Empty uses the request's own
	// scheme and Host.
	BootstrapBase string
	// Ready, when set, reports whether the relay can serve (for GET /api/ready); nil is always
	// ready.
	Ready func() error
	// FrameOrigins are the origins, besides its own, the page may frame: the registered external
	// mini-apps (scheme://host[:port] each, checked by whoever sets them). They go into the
	// page's frame-src and nowhere else.
	FrameOrigins []string
	// BodyIdleTimeout and BodyTimeout bound reading a request body (see the constants of the
	// same names, the defaults for zero).
	BodyIdleTimeout, BodyTimeout time.Duration
	// Bearer, when set, reports whether a bearer (Authorization: Bearer) is one the relay issued
	// and has not revoked (an MCP client's, a paired machine's). A connection that shows one, like one with a
	// session or the host token, is not held to its address's connection bound (LimitConns).
	Bearer func(string) bool
}

// Server is the relay's http.Handler.
type Server struct {
	cfg    Config
	public fs.FS
	mux    *routes
	log    *slog.Logger
	// publicHost is the host name of Config.Origin, which Host headers may name besides loopback.
	publicHost string
	// printed is Config.BootstrapBase when it is a loopback address: the one name the page's
	// files are served under (redirectedToPrinted).
	printed *url.URL
	// appFiles holds folder apps' files (see AppFilesPath).
	appFiles *appFiles
	// bridgePolicies widen the bridge's policy (AddBridgePolicy).
	bridgePolicies []BridgePolicy
	// busy counts the requests being served, WebSockets included, which http.Server.Shutdown
	// does not wait for once they are hijacked.
	busy sync.WaitGroup
	// routes are the patterns registered, in order, and bodies the body rules of those that
	// are not JSONBody (see Routes, HandleBody).
	routesMu sync.RWMutex
	routes   []Route
	bodies   map[string]BodyRule
	// etags are the page's files' validators (etag.go).
	etags etags
}

// New checks cfg and returns a Server for it.
func New(cfg Config) (*Server, error) {
	files := cfg.Files
	if files == nil {
		info, err := os.Stat(cfg.Public)
		if err != nil {
			return nil, fmt.Errorf("server: public directory: %w", err)
		}
		if !info.IsDir() {
			return nil, fmt.Errorf("server: public directory %s is not a directory", cfg.Public)
		}
		files = os.DirFS(cfg.Public)
	}
	s := &Server{cfg: cfg, public: files, mux: &routes{ServeMux: http.NewServeMux()}, log: cfg.Log, publicHost: originHost(cfg.Origin), printed: printedLoopback(cfg.BootstrapBase), appFiles: newAppFiles(), bodies: map[string]BodyRule{}}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.Handle("GET /api/health", http.HandlerFunc(s.health))
	s.Handle("GET /api/ready", http.HandlerFunc(s.ready))
	s.registerSessionRoutes()
	s.registerAppFileRoutes()
	s.Handle(staticPattern, http.HandlerFunc(s.static))
	s.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { NotFound(w) }))
	return s, nil
}

// Handle registers h for pattern: the server's own routes and those other packages add (the
// channel, the live socket, the API). A state-changing request to it takes a JSON body (see
// stateChangeRefused; HandleBody registers a route that takes another).
func (s *Server) Handle(pattern string, h http.Handler) { s.HandleBody(pattern, JSONBody, h) }

// Patterns returns every pattern registered on the server's mux, in the order they were
// registered: the relay's routes, which the hostile suite checks each have a case (its doors).
// The app hosts (AppHostFiles) and folder apps' files (AppFilesPath) are served before the mux.
func (s *Server) Patterns() []string { return s.mux.list() }

// routes is the server's mux, which keeps the patterns registered on it.
type routes struct {
	*http.ServeMux
	mu       sync.Mutex
	patterns []string
}

func (m *routes) Handle(pattern string, h http.Handler) {
	m.record(pattern)
	m.ServeMux.Handle(pattern, h)
}

func (m *routes) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.record(pattern)
	m.ServeMux.HandleFunc(pattern, h)
}

func (m *routes) record(pattern string) {
	m.mu.Lock()
	m.patterns = append(m.patterns, pattern)
	m.mu.Unlock()
}

func (m *routes) list() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.patterns)
}

// ServeHTTP gives the request its id, puts the security headers on the response, turns a panic
// into a JSON 500, and logs one line when the request ends (for a WebSocket, when it closes). No
// log line carries a query, a header value or a body: secrets travel there. Before any route it
// checks the Host header (hostRefused); a mini-app's own host (AppHost) is then served its bridge
// and nothing else (GET and HEAD only), the page opened under another loopback name is sent to
// the printed one (redirectedToPrinted), and every other request checks the Origin
// (originRefused) and the session gate, and, when it is not GET or HEAD, passes the cross-site
// wall (stateChangeRefused) before any route.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.busy.Add(1)
	held := &heldRequest{}
	var doneOnce sync.Once
	held.done = func() { doneOnce.Do(s.busy.Done) }
	defer func() { // last, after the request's log line
		if !held.detached {
			held.done()
		}
	}()
	start := time.Now()
	body := s.boundBody(w, r)
	info := s.requestInfo(r)
	info.held = held
	r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
	w.Header().Set(RequestIDHeader, info.id)
	setSecurityHeaders(w.Header(), r.Host, r.URL.Path, s.cfg.FrameOrigins, s.cfg.Origin)
	if r.URL.Path == BridgePath {
		widenBridgePolicy(w.Header(), appFilesSource(r))
		for _, p := range s.bridgePolicies {
			p(w.Header(), r)
		}
	}
	if info.https && s.cfg.HSTS {
		w.Header().Set("Strict-Transport-Security", "max-age=31536000")
	}
	rw := &trackingWriter{ResponseWriter: w, body: body}
	defer s.logRequest(r, rw, info, start)
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if v == http.ErrAbortHandler {
			panic(v)
		}
		s.log.Error("handler panicked", "request_id", info.id, "method", r.Method, "path", loggedPath(r), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		if !rw.wrote {
			WriteRefusal(rw, http.StatusInternalServerError, refusal.New(refusal.InternalError, "the relay failed while answering %s; the error is in its log", r.URL.Path))
		}
	}()
	if s.connRefused(rw, r) || s.hostRefused(rw, r) {
		return
	}
	if AppHost(r.Host) {
		s.serveAppHost(rw, r)
		return
	}
	if s.redirectedToPrinted(rw, r) {
		return
	}
	if s.originRefused(rw, r) {
		return
	}
	if strings.HasPrefix(r.URL.Path, AppFilesPath) {
		// A folder app's files: no session (its sandboxed frame sends no cookie), the token is
		// the key.
		s.serveAppFile(rw, r)
		return
	}
	if s.gate(rw, r) || s.stateChangeRefused(rw, r) {
		return
	}
	s.mux.ServeHTTP(rw, r)
}

// Drain waits until every request being served has ended and been logged, WebSockets
// included, or ctx ends. Once the listeners are closed and the sockets told to go, it is what
// makes a shutdown complete.
func (s *Server) Drain(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		s.busy.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "build": s.cfg.Build})
}

// ready answers 200 {"ok":true} when Config.Ready says the relay can serve, else 503
// {"ok":false,"refused":"relay-shutting-down"|"internal-error",...}.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(); err != nil {
			rf, ok := refusal.As(err)
			if !ok {
				rf = refusal.New(refusal.InternalError, "the relay is not ready; its log says why")
			}
			WriteRefusal(w, http.StatusServiceUnavailable, rf)
			return
		}
	}
	WriteJSON(w, http.StatusOK, map[string]any{"ok": true})
}

// WriteJSON answers v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = refusal.New(refusal.InternalError, "the relay could not encode its answer").JSON()
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// WriteRefusal answers r as {"ok":false,"refused":...,"why":...} with status; a state-disk-full
// refusal (internal/core/durable) always answers 507, whichever door passed it on.
func WriteRefusal(w http.ResponseWriter, status int, r *refusal.Refusal) {
	if r.Rule == refusal.StateDiskFull {
		status = http.StatusInsufficientStorage // whichever door it came through
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(r.JSON(), '\n'))
}

// NotFound answers the JSON 404.
func NotFound(w http.ResponseWriter) {
	WriteRefusal(w, http.StatusNotFound, refusal.New(refusal.NotFound, "nothing is served at this address"))
}

// contentTypes are the types the page's files are served with; anything else is not served.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".wasm": "application/wasm",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".ico":  "image/x-icon",
	".json": "application/json; charset=utf-8",
}

// encodings are the precompressed siblings looked for, best first.
var encodings = []struct{ token, suffix string }{{"br", ".br"}, {"gzip", ".gz"}}

func (s *Server) static(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("path")
	if name == "" {
		name = "index.html"
	}
	s.serveFile(w, r, name)
}

// serveFile answers the public directory's file name (slash-separated, relative), with its
// precompressed copy when the client takes one.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, name string) {
	name = path.Clean(name)
	if "/"+name == OldGuestPath {
		name = GuestPath[1:]
	}
	ctype, ok := contentTypes[path.Ext(name)]
	if !ok || !fs.ValidPath(name) || strings.HasPrefix(path.Base(name), ".") || strings.HasPrefix(name, "api/") {
		NotFound(w)
		return
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Cache-Control", "no-cache")
	if path.Ext(name) == ".wasm" {
		h.Add("Vary", "Accept-Encoding")
		for _, enc := range encodings {
			if !acceptsEncoding(r.Header.Get("Accept-Encoding"), enc.token) {
				continue
			}
			if f, info, err := s.open(name + enc.suffix); err == nil {
				defer f.Close()
				h.Set("Content-Encoding", enc.token)
				if tag := s.etags.of(name+enc.suffix, info, f); tag != "" {
					h.Set("ETag", tag)
				}
				if r.Header.Get("Range") == "" {
					// ServeContent leaves the length out of encoded answers; the page's
					// progress needs it.
					h.Set("Content-Length", strconv.FormatInt(info.Size(), 10))
				}
				http.ServeContent(w, r, "", info.ModTime(), f)
				return
			}
		}
	}
	f, info, err := s.open(name)
	if err != nil {
		NotFound(w)
		return
	}
	defer f.Close()
	if tag := s.etags.of(name, info, f); tag != "" {
		h.Set("ETag", tag)
	}
	http.ServeContent(w, r, "", info.ModTime(), f)
}

// open opens a regular file of the public directory; a directory or a missing file is an error.
func (s *Server) open(name string) (readSeekFile, fs.FileInfo, error) {
	f, err := s.public.Open(name)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		f.Close()
		return nil, nil, errors.New("server: not a regular file")
	}
	rs, ok := f.(readSeekFile)
	if !ok {
		f.Close()
		return nil, nil, errors.New("server: file cannot seek")
	}
	return rs, info, nil
}

type readSeekFile interface {
	fs.File
	Seek(offset int64, whence int) (int64, error)
}

// acceptsEncoding reports whether an Accept-Encoding header value admits token with a non-zero
// quality.
func acceptsEncoding(header, token string) bool {
	for part := range strings.SplitSeq(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(name), token) {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}

// logRequest writes the request's one log line. Probes of /api/health and /api/ready log at
// Debug, so a load balancer's checks do not fill the log.
func (s *Server) logRequest(r *http.Request, rw *trackingWriter, info requestInfo, start time.Time) {
	level := slog.LevelInfo
	if r.URL.Path == "/api/health" || r.URL.Path == "/api/ready" {
		level = slog.LevelDebug
	}
	if !s.log.Enabled(r.Context(), level) {
		return
	}
	status := rw.status
	if status == 0 {
		status = http.StatusOK
	}
	scheme := "http"
	if info.https {
		scheme = "https"
	}
	attrs := []slog.Attr{
		slog.String("request_id", info.id), slog.String("method", r.Method), slog.String("path", loggedPath(r)),
		slog.Int("status", status), slog.Int64("bytes", rw.bytes), slog.Float64("ms", float64(time.Since(start).Microseconds())/1000),
		slog.String("client", info.client), slog.String("scheme", scheme),
	}
	if s.cfg.Gate != nil {
		if id := s.cfg.Gate.SessionID(r); id != "" {
			attrs = append(attrs, slog.String("session", id))
		}
	}
	s.log.LogAttrs(context.WithoutCancel(r.Context()), level, "request", attrs...)
}

// trackingWriter remembers whether a response was started, so a panic after the header went out
// does not write a second one, and the status and size for the request's log line.
type trackingWriter struct {
	http.ResponseWriter
	body   *deadlineBody // the request's body, when it has one
	wrote  bool
	status int
	bytes  int64
}

func (w *trackingWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status = code
		w.closeUnread()
	}
	w.wrote = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *trackingWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.status = http.StatusOK
		w.closeUnread()
	}
	w.wrote = true
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// closeUnread marks an answer given without a byte of its request's body read as the
// connection's last (Connection: close). net/http would otherwise read the body before answering
// (it cannot tell that boundBody's reader stands for its own, so it takes the body for one the
// handler may still want): a client that sent only headers, or that waits for 100 Continue as
// curl does for a large body, would wait out the body's idle bound for an answer the relay had
// already decided. A body read in part (over its route's bound) is left to net/http, which reads
// a little of the rest so that the client, still sending, sees the answer.
func (w *trackingWriter) closeUnread() {
	if w.body != nil && !w.body.read {
		w.Header().Set("Connection", "close")
		w.body.rc.SetReadDeadline(time.Now()) // nor read when the body is closed: see refuseUnread
	}
}

// Unwrap lets http.ResponseController reach the underlying writer (WebSocket upgrades need it).
func (w *trackingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
