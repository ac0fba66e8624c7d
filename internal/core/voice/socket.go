package voice

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/core/live"
	"github.com/voicebox-go/voicebox/internal/core/outbound"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/core/session"
	"github.com/voicebox-go/voicebox/internal/core/wsbound"
	"github.com/voicebox-go/voicebox/internal/shared/liveaudio"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/tool"
)

// Bounds of the /live socket.
const (
	// MaxAudioFrameBytes bounds one binary frame of PCM16 from the page (about 340 ms at
	// 24 kHz; the page sends 10 ms frames): liveaudio.MaxFrameBytes, the bound the page's live
	// worker holds its frames to as well.
	MaxAudioFrameBytes = liveaudio.MaxFrameBytes
	// MaxTextBytes bounds typed text in one frame.
	MaxTextBytes = 4 << 10
	// maxReadBytes is the socket's read limit: the larger of the two, with room for JSON.
	maxReadBytes = MaxAudioFrameBytes + 1024
	// DefaultMaxSockets bounds the /live sockets open at once (each holds a vendor connection).
	DefaultMaxSockets = 128
	// DefaultMaxSessionSockets bounds the /live sockets of one gate session at once.
	DefaultMaxSessionSockets = 4
	// outQueue is how many frames wait for the page; audio past it is dropped and counted.
	outQueue = 256
	// writeTimeout bounds one frame written to the page.
	writeTimeout = 10 * time.Second
)

// Options configure a Handler.
type Options struct {
	// Providers are the live providers; Settings say which one the next session uses; Keys hold
	// their keys. All three are required.
	Providers *live.Providers
	Settings  *Settings
	Keys      *Keys
	// Catalogue is what the model may call; nil offers no tools (NoTools).
	Catalogue tool.Catalogue
	// BaseURLs overrides a provider's vendor endpoint (a fixture's, in tests).
	BaseURLs map[string]string
	// Transport makes the transport of each session; nil means a WebSocketTransport.
	Transport func() live.Transport
	// PageOrigin decides whether an upgrade comes from the page (the server's PageOrigin). Nil
	// admits only the relay's own loopback origin. Admitting an origin the host does not
	// control lets that origin's pages talk to the model with the host's keys.
	PageOrigin func(*http.Request) bool
	// PageSession, when set (the loopback gate), must accept the upgrade's session.
	PageSession func(*http.Request) bool
	// SessionOf names the gate session of an upgrade ("" for none), for the per-session bound
	// and the session's end.
	SessionOf func(*http.Request) string
	// Sessions, when set, is the store of the sessions SessionOf names: when a session expires
	// or is revoked, its /live sockets are told why (session-expired, session-revoked) and
	// closed 1008.
	Sessions *session.Store
	// Limiter bounds the /live sockets open at once, overall and per session; nil makes one
	// from MaxSockets and MaxSessionSockets (zero means DefaultMaxSockets and
	// DefaultMaxSessionSockets).
	Limiter                       *session.Limiter
	MaxSockets, MaxSessionSockets int
	// Log receives session events; never a key. Nil discards.
	Log *slog.Logger
}

// Handler serves /live: one socket is one live session. It is safe for concurrent use.
type Handler struct {
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	all     map[*socket]struct{}
	closing bool
}

// New returns the /live handler.
func New(opts Options) *Handler {
	if opts.Catalogue == nil {
		opts.Catalogue = NoTools{}
	}
	if opts.Limiter == nil {
		if opts.MaxSockets <= 0 {
			opts.MaxSockets = DefaultMaxSockets
		}
		if opts.MaxSessionSockets <= 0 {
			opts.MaxSessionSockets = DefaultMaxSessionSockets
		}
		opts.Limiter = session.NewLimiter(opts.MaxSockets, opts.MaxSessionSockets)
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{opts: opts, log: log, all: map[*socket]struct{}{}}
}

// Configured reports whether the next session could talk: the provider the settings name runs
// live sessions and has a key. The assistant reads it to tell the page whether it is in offline
// mode.
func (h *Handler) Configured() bool {
	return Configured(h.opts.Providers, h.opts.Settings, h.opts.Keys)
}

// Open returns how many /live sockets are open.
func (h *Handler) Open() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.all)
}

// Close ends every session and closes its socket (1001), and refuses new ones; for shutdown.
func (h *Handler) Close() {
	h.mu.Lock()
	h.closing = true
	socks := make([]*socket, 0, len(h.all))
	for s := range h.all {
		socks = append(socks, s)
	}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range socks {
		wg.Go(func() { s.shut(websocket.StatusGoingAway, nil, "relay shutting down") })
	}
	wg.Wait()
}

// ServeHTTP admits a page's /live socket and runs one session on it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.pageOrigin(r) {
		h.log.Info("live: origin refused", "origin", r.Header.Get("Origin"))
		server.WriteRefusal(w, http.StatusForbidden, refusal.New(refusal.OriginRefused, "/live takes only the page's own origin"))
		return
	}
	if h.opts.PageSession != nil && !h.opts.PageSession(r) {
		server.WriteRefusal(w, http.StatusUnauthorized, refusal.New(refusal.LoopbackUnauthenticated,
			"this relay requires a session: open the bootstrap address it printed at start"))
		return
	}
	sid := ""
	if h.opts.SessionOf != nil {
		sid = h.opts.SessionOf(r)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	s := &socket{h: h, ctx: ctx, session: sid, out: newFrameQueue(),
		started: make(chan struct{}), accepted: make(chan struct{})}
	// The socket counts from its upgrade request (as /channel's do); a refusal is written once
	// the socket is open, so the page learns why.
	release, rf := session.Sockets{Limiter: h.opts.Limiter, Store: h.opts.Sessions}.Admit(sid, func(why *refusal.Refusal) {
		h.log.Info("live: session ended; closing its socket", "refused", why.Rule, "session", sid)
		go func() {
			<-s.accepted
			if s.ws != nil {
				s.shut(websocket.StatusPolicyViolation, refusedFrame(why), string(why.Rule))
			}
		}()
	})
	server.SetSendBuffer(r, outbound.SendBuffer) // a page that stops reading is found within it
	// The origin was checked above, more strictly than Accept's own check would.
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		close(s.accepted)
		cancel()
		if release != nil {
			release()
		}
		h.log.Info("live: upgrade failed", "err", err)
		return
	}
	ws.SetReadLimit(maxReadBytes)
	s.ws, s.page = ws, wsbound.New(ws, writeTimeout)
	close(s.accepted)
	// The session runs on a goroutine of its own, and the handler returns: net/http's goroutine
	// (its stack grown by the upgrade) and the request's state are let go (BENCHMARKS.md, idle
	// memory). Until done, the request still counts for the server's drain.
	done := server.Detach(r)
	go func() {
		defer done()
		if release != nil {
			defer release()
		}
		defer cancel()
		defer s.recoverPanic()
		s.serve(rf, cancel)
	}()
}

// serve runs the socket's session, or tells the page rf, until the socket ends.
func (s *socket) serve(rf *refusal.Refusal, cancel context.CancelFunc) {
	if rf == nil {
		rf = s.h.track(s)
	}
	if rf != nil {
		s.refuse(rf)
		s.drain()
		cancel()
		s.stopWriting()
		s.ws.CloseNow()
		return
	}
	defer s.h.untrack(s)
	s.run()
	cancel()
	s.tools.Wait()
	s.stopWriting()
	s.ws.CloseNow()
}

// recoverPanic logs a panic of the session's goroutine, which the server's own recovery no longer
// covers once the handler has returned, and closes the socket.
func (s *socket) recoverPanic() {
	v := recover()
	if v == nil {
		return
	}
	s.h.log.Error("live: the session panicked", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	s.ws.CloseNow()
}

func (h *Handler) pageOrigin(r *http.Request) bool {
	if h.opts.PageOrigin != nil {
		return h.opts.PageOrigin(r)
	}
	return server.OwnLoopbackOrigin(r)
}

// track lists s among the open sockets (for Close), unless the relay is shutting down.
func (h *Handler) track(s *socket) *refusal.Refusal {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return refusal.New(refusal.RelayShuttingDown, "the relay is shutting down; try again once it is back")
	}
	h.all[s] = struct{}{}
	return nil
}

func (h *Handler) untrack(s *socket) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.all, s)
}

// outFrame is one frame for the page; closeCode, when set, closes the socket after it.
type outFrame struct {
	binary      bool
	data        []byte
	closeCode   websocket.StatusCode
	closeReason string
}

// socket is one /live connection and its session.
type socket struct {
	h         *Handler
	ws        *websocket.Conn
	page      *wsbound.Conn // ws's writes, each bounded by writeTimeout
	ctx       context.Context
	session   string
	out       *frameQueue    // the page's frames; whoever queues one while none is written writes it
	closing   sync.WaitGroup // the close handshake a closing frame started
	started   chan struct{}  // closed once sess is set (or will never be)
	accepted  chan struct{}  // closed once ws is set (nil when the upgrade failed)
	startOnce sync.Once
	sess      atomic.Pointer[live.Conversation]
	rate      int
	outRate   int
	tools     sync.WaitGroup
	view      *view // the instruction with the current view note (see view.go)

	audioDropped atomic.Int64
	endOnce      sync.Once
}

// write writes one frame to the page (see frameQueue.deliver); false once writing is over: the
// frame closed the socket, or the write failed (the socket is then closed at once). The close
// handshake runs on its own, so the caller that wrote the closing frame does not wait for it.
func (s *socket) write(f outFrame) bool {
	var err error
	if f.data != nil {
		typ := websocket.MessageText
		if f.binary {
			typ = websocket.MessageBinary
		}
		err = s.page.Write(typ, f.data)
	}
	if f.closeCode != 0 {
		s.closing.Go(func() { s.ws.Close(f.closeCode, f.closeReason) })
		return false
	}
	if err != nil {
		if s.page.SlowReader() {
			why := outbound.SlowReader("the page took no bytes for " + writeTimeout.String())
			s.h.log.Warn("live: a socket was closed", "rule", why.Rule, "session", s.session, "why", why.Why)
		}
		s.ws.CloseNow()
		return false
	}
	return true
}

// post queues f for the page, waiting for room when wait is set (audio is dropped instead), and
// writes what waits unless another goroutine is writing it already; false when f was not queued.
func (s *socket) post(f outFrame, wait bool) bool {
	var queued bool
	if wait {
		queued = s.out.push(f, nil)
	} else {
		queued = s.out.tryPush(f)
	}
	if queued {
		s.out.deliver(s.write)
	}
	return queued
}

// stopWriting closes the page's queue after the frames under way, and waits for a close
// handshake a closing frame started.
func (s *socket) stopWriting() {
	s.out.close()
	s.closing.Wait()
}

// send queues a JSON frame for the page; it gives up once writing is over.
func (s *socket) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	s.post(outFrame{data: b}, true)
}

// end queues the last frame (v, if any) and the close; only the first call counts.
func (s *socket) end(v any, code websocket.StatusCode, reason string) {
	s.endOnce.Do(func() {
		var b []byte
		if v != nil {
			b, _ = json.Marshal(v)
		}
		s.post(outFrame{data: b, closeCode: code, closeReason: reason}, true)
	})
}

func (s *socket) markStarted() { s.startOnce.Do(func() { close(s.started) }) }

// shut ends the session and closes the socket with code at once (shutdown, a session's end),
// after telling the page frame when it is not nil.
func (s *socket) shut(code websocket.StatusCode, frame any, reason string) {
	s.endOnce.Do(func() {}) // the close code is this one, not the session's
	if sess := s.sess.Load(); sess != nil {
		sess.Close()
	}
	if frame != nil {
		if b, err := json.Marshal(frame); err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			s.ws.Write(ctx, websocket.MessageText, b)
			cancel()
		}
	}
	s.ws.Close(code, reason)
}

// refuse tells the page why there is no session and closes (1008).
func (s *socket) refuse(rf *refusal.Refusal) {
	s.h.log.Info("live: refused", "refused", rf.Rule)
	s.end(refusedFrame(rf), websocket.StatusPolicyViolation, string(rf.Rule))
}

func refusedFrame(rf *refusal.Refusal) map[string]any {
	return map[string]any{"type": "refused", "refused": rf.Rule, "why": rf.Why}
}

// run starts the session the settings name and serves the page's frames until the socket ends.
func (s *socket) run() {
	defer s.markStarted()
	h := s.h
	choice := h.opts.Settings.Current()
	rate, err := h.opts.Providers.InputRate(choice.Provider)
	if err != nil {
		rf, _ := refusal.As(err)
		s.refuse(rf)
		s.drain()
		return
	}
	offer, _ := h.opts.Providers.Offer(choice.Provider)
	key := h.opts.Keys.Key(choice.Provider)
	if key == "" {
		s.refuse(refusal.New(refusal.LiveKeyMissing, "no %s key is configured on the relay: set %s (or store one with PUT /api/keys) and start a new session; until then, use the offline mode (typed commands)",
			offer.Label, offer.KeyEnv))
		s.drain()
		return
	}
	s.rate, s.outRate = rate, offer.OutputRate
	s.send(map[string]any{"type": "rate", "inputRate": rate, "outputRate": offer.OutputRate,
		"provider": choice.Provider, "model": choice.Model, "voice": choice.Voice, "thinking": choice.Thinking})
	cat := h.opts.Catalogue
	s.view = &view{cat: cat}
	var transport live.Transport
	if h.opts.Transport != nil {
		transport = h.opts.Transport()
	}
	h.log.Info("live: session starting", "provider", choice.Provider, "model", choice.Model)
	sess, err := h.opts.Providers.Start(s.ctx, live.Config{Choice: choice, Key: key, BaseURL: h.opts.BaseURLs[choice.Provider],
		Tools: cat.Declarations(), Instruction: s.view.start(s.ctx), Transport: transport, Callbacks: s.callbacks(), Log: h.log})
	if err != nil {
		// The session reported Failed, which ended the socket; a refusal before it had a
		// session (a wrong model in stale settings) ends it here.
		if rf, ok := refusal.As(err); ok {
			s.refuse(rf)
		} else {
			s.end(map[string]any{"type": "state", "state": live.Failed, "detail": err.Error()}, websocket.StatusNormalClosure, "session failed")
		}
		s.drain()
		return
	}
	s.sess.Store(sess)
	s.markStarted()
	defer sess.Close()
	cancelChange := cat.OnChange(func() {
		err := s.view.update(s.ctx, sess, true)
		if rf, ok := refusal.As(err); ok && rf.Rule == refusal.LiveUpdateUnsupported {
			s.send(map[string]any{"type": "notice", "text": "The tools changed; " + providerLabel(offer) + " takes the new ones from the next session."})
		}
	})
	defer cancelChange()
	s.read(sess)
	st := sess.Stats()
	h.log.Info("live: session over", "provider", choice.Provider, "audioDroppedBeforeReady", st.AudioDropped, "audioDroppedToPage", s.audioDropped.Load())
}

func providerLabel(o live.Offer) string {
	if o.Label != "" {
		return o.Label
	}
	return "this provider"
}

// drain reads the page until its socket ends, so the close handshake completes.
func (s *socket) drain() {
	for {
		if _, _, err := s.ws.Read(s.ctx); err != nil {
			return
		}
	}
}

// read serves the page's frames until the socket ends.
func (s *socket) read(sess *live.Conversation) {
	for {
		// Background, not s.ctx (which does not end before this loop does): coder/websocket
		// starts a context.AfterFunc per frame for a context that can end.
		typ, r, err := s.ws.Reader(context.Background())
		if err != nil {
			return
		}
		if !s.frame(sess, typ, r) {
			return
		}
	}
}

// readBuffers hold page frames while they are read and handed on: everything a frame is handed
// to is done with it when the call returns, so a steady stream of audio allocates nothing, and
// an idle session holds no buffer.
var readBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// frame reads one frame from r and handles it; false when the read failed.
func (s *socket) frame(sess *live.Conversation, typ websocket.MessageType, r io.Reader) bool {
	bp := readBuffers.Get().(*[]byte)
	defer readBuffers.Put(bp)
	b, err := readAll(r, (*bp)[:0])
	if cap(b) <= MaxAudioFrameBytes+1024 {
		*bp = b[:0] // keep a buffer that grew for a large frame, up to the read limit
	}
	if err != nil {
		return false
	}
	if typ == websocket.MessageBinary {
		s.audio(sess, b)
	} else {
		s.message(sess, b)
	}
	return true
}

// readAll appends what r holds to b, growing it only when it is full.
func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

func (s *socket) audio(sess *live.Conversation, pcm []byte) {
	if len(pcm) == 0 || len(pcm)%2 != 0 || len(pcm) > MaxAudioFrameBytes {
		s.send(refusedFrame(refusal.New(refusal.LiveAudioFrameInvalid,
			"an audio frame is PCM16: an even number of bytes, 2 to %d, at %d Hz; this one had %d bytes", MaxAudioFrameBytes, s.rate, len(pcm))))
		return
	}
	err := sess.SendAudio(pcm, s.rate)
	switch refusal.RuleOf(err) {
	case "", refusal.LiveNotReady, refusal.LiveSessionClosed:
	default:
		if rf, ok := refusal.As(err); ok {
			s.send(refusedFrame(rf))
		}
	}
}

// message handles a JSON frame: {"type":"text","text":...}, {"type":"interrupt","playedMs":N}
// or {"type":"close"}.
func (s *socket) message(sess *live.Conversation, b []byte) {
	var m struct {
		Type     string  `json:"type"`
		Text     *string `json:"text"`
		PlayedMs *int    `json:"playedMs"`
	}
	if strictjson.Decode(b, &m) != nil {
		s.send(refusedFrame(refusal.New(refusal.LiveMessageInvalid, "a text frame is one JSON object: {type: text|interrupt|close, ...}")))
		return
	}
	var err error
	switch {
	case m.Type == "text" && m.Text != nil && *m.Text != "" && len(*m.Text) <= MaxTextBytes && m.PlayedMs == nil:
		err = sess.SendText(*m.Text)
	case m.Type == "interrupt" && m.Text == nil:
		played := -1
		if m.PlayedMs != nil && *m.PlayedMs >= 0 {
			played = *m.PlayedMs
		}
		err = sess.Interrupt(played)
	case m.Type == "close" && m.Text == nil && m.PlayedMs == nil:
		sess.Close()
	default:
		err = refusal.New(refusal.LiveMessageInvalid, "a text frame is {type:\"text\",text} (1 to %d bytes), {type:\"interrupt\",playedMs?} or {type:\"close\"}", MaxTextBytes)
	}
	if rf, ok := refusal.As(err); ok {
		s.send(refusedFrame(rf))
	} else if err != nil {
		s.send(map[string]any{"type": "state", "state": live.Error, "detail": err.Error()})
	}
}

// callbacks turn the session's reports into page frames, and tool calls into answers.
func (s *socket) callbacks() live.Callbacks {
	return live.Callbacks{
		OnState: func(st live.State, detail string) {
			frame := map[string]any{"type": "state", "state": st, "detail": detail}
			if st.Terminal() {
				s.end(frame, websocket.StatusNormalClosure, "session ended")
				return
			}
			if st == live.TurnComplete {
				go s.view.afterTurn(s.ctx, s.sess.Load())
			}
			s.send(frame)
		},
		OnText: func(text string, kind live.TextKind) {
			s.send(map[string]any{"type": "transcript", "kind": kind, "text": text})
		},
		OnAudio: func(pcm []byte, rate int) {
			if rate != s.outRate {
				s.h.log.Warn("live: output audio at an unannounced rate dropped", "rate", rate, "announced", s.outRate)
				return
			}
			if !s.post(outFrame{binary: true, data: pcm}, false) {
				s.audioDropped.Add(1)
			}
		},
		OnToolCall: func(calls []live.Call) {
			for _, call := range calls {
				s.send(map[string]any{"type": "tool-call", "id": call.ID, "name": call.Name, "args": call.Args})
				s.tools.Go(func() { s.call(call) })
			}
		},
	}
}

// call answers one tool call: through the catalogue, shown to the page, sent to the vendor.
func (s *socket) call(call live.Call) {
	<-s.started
	res := answer(s.ctx, s.h.opts.Catalogue, call)
	frame := map[string]any{"type": "tool-result", "id": res.ID, "name": res.Name, "result": shown(res.Result)}
	if rule, refused := res.Refused(); refused {
		frame["refused"] = rule
	}
	s.send(frame)
	sess := s.sess.Load()
	if sess == nil || !sess.SendToolResponses([]live.ToolResult{res}) {
		s.h.log.Info("live: a tool result did not reach the vendor (the session ended, or the vendor withdrew the call)", "tool", call.Name)
	}
}
