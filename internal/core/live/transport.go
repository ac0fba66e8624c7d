package live

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/core/wsbound"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// SendKind says what a frame sent to the vendor carries, so the facade can gate it.
type SendKind int

// The kinds of frames a provider sends.
const (
	// SendHandshake is the setup (session.update, setup); allowed before ready.
	SendHandshake SendKind = iota + 1
	// SendAudio carries microphone audio; refused before ready.
	SendAudio
	// SendText carries what the person typed; refused before ready.
	SendText
	// SendControl is everything else (tool outputs, cancel, response.create).
	SendControl
)

// TransportEventKind is the kind of a TransportEvent.
type TransportEventKind int

// The events a transport delivers, in order; EventClose is the last of a connection.
const (
	TransportOpened TransportEventKind = iota + 1
	TransportMessage
	TransportError
	TransportClosed
)

// TransportEvent is plain data about the vendor connection.
type TransportEvent struct {
	Kind TransportEventKind
	// TransportMessage: the frame, and whether it came as a binary frame.
	Data   []byte
	Binary bool
	// TransportClosed: the close code (1006 when the connection broke without one) and reason;
	// TransportError: Reason.
	Code   int
	Reason string
}

// ConnectOptions are what a provider connects with.
type ConnectOptions struct {
	// Headers are sent with the upgrade request (the vendor key's header among them).
	Headers http.Header
	// OnEvent receives the connection's events, one at a time, in order, on the transport's
	// goroutine. It must not block for long.
	OnEvent func(TransportEvent)
}

// Transport is how a provider reaches its vendor. One transport carries one connection at a
// time; Connect may be called again once the previous connection closed.
type Transport interface {
	// CarriesHeaders reports whether Connect sends ConnectOptions.Headers. A transport that
	// cannot (a browser WebSocket, say) must report false: the facade then refuses to connect
	// with headers instead of connecting without them.
	CarriesHeaders() bool
	// Connect dials url and returns once the connection is open or has failed; events follow
	// through opts.OnEvent (TransportOpened first).
	Connect(ctx context.Context, url string, opts ConnectOptions) error
	// Send writes one frame; it reports acceptance by the transport, not by the vendor. The
	// frame is the caller's again once Send returns (providers reuse their buffers): a
	// transport that keeps it must copy it.
	Send(kind SendKind, frame []byte) error
	// Close closes the connection with code and reason; idempotent.
	Close(code int, reason string)
}

// framePool holds the buffers providers build audio frames in (see AudioFrame).
var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// AudioFrame builds head + base64(pcm) + tail in a pooled buffer, passes it to send, and takes
// the buffer back: the audio path of a provider allocates nothing per frame.
func AudioFrame(head, tail string, pcm []byte, send func([]byte) error) error {
	bp := framePool.Get().(*[]byte)
	frame := append((*bp)[:0], head...)
	frame = base64.StdEncoding.AppendEncode(frame, pcm)
	frame = append(frame, tail...)
	err := send(frame)
	*bp = frame[:0]
	framePool.Put(bp)
	return err
}

// ErrNotConnected is returned by Send on a transport with no open connection.
var ErrNotConnected = errors.New("live: the vendor connection is not open")

// facade is the transport a provider sees: the injected one behind the session's gates.
type facade struct {
	t     Transport
	ready func() bool
	drop  func()
}

func (f *facade) CarriesHeaders() bool { return f.t.CarriesHeaders() }

func (f *facade) Connect(ctx context.Context, url string, opts ConnectOptions) error {
	if len(opts.Headers) > 0 && !f.t.CarriesHeaders() {
		return refusal.New(refusal.LiveTransportUnauthenticated,
			"this transport cannot send the vendor's authentication header, so it does not connect at all")
	}
	return f.t.Connect(ctx, url, opts)
}

func (f *facade) Send(kind SendKind, frame []byte) error {
	if (kind == SendAudio || kind == SendText) && !f.ready() {
		f.drop()
		return refusal.New(refusal.LiveNotReady, "the vendor has not acknowledged the setup yet")
	}
	return f.t.Send(kind, frame)
}

func (f *facade) Close(code int, reason string) { f.t.Close(code, reason) }

// MaxVendorFrameBytes bounds a frame read from a vendor. Audio deltas are a few KiB; a larger
// frame closes the connection (1009).
const MaxVendorFrameBytes = 4 << 20

// DialBound bounds a WebSocket dial to a vendor.
const DialBound = 15 * time.Second

// writeBound bounds one frame written to a vendor; a vendor that does not read for this long is
// treated as gone.
const writeBound = 10 * time.Second

// WebSocketTransport is the real transport: a coder/websocket client connection. It carries
// headers. The zero value is ready to use.
type WebSocketTransport struct {
	// Client, when set, is the HTTP client the upgrade goes through (tests may set one). Its
	// redirect policy is replaced: a redirect is never followed (see Connect).
	Client *http.Client

	mu   sync.Mutex
	conn *websocket.Conn
	out  *wsbound.Conn // conn's writes, each bounded by writeBound
	dial *dialing      // the dial under way, which Close abandons
}

// dialing is one Connect under way.
type dialing struct {
	cancel    context.CancelFunc
	abandoned bool
}

// errRedirect stops the upgrade at a redirect.
var errRedirect = errors.New("live: the vendor endpoint redirected; the key is not sent on")

// CarriesHeaders reports true: the upgrade request carries every header.
func (t *WebSocketTransport) CarriesHeaders() bool { return true }

// Connect dials url with opts.Headers and starts reading. It follows no redirect: the HTTP
// client would send the key's header on to wherever a redirect points, another host or plain
// http included, and a realtime endpoint has no reason to redirect. A Close while the dial is
// under way abandons it: Connect then closes what it got and fails.
func (t *WebSocketTransport) Connect(ctx context.Context, url string, opts ConnectOptions) error {
	ctx, cancel := context.WithTimeout(ctx, DialBound)
	defer cancel()
	client := &http.Client{}
	if t.Client != nil {
		*client = *t.Client
	}
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return errRedirect }
	d := &dialing{cancel: cancel}
	t.mu.Lock()
	t.dial = d
	t.mu.Unlock()
	c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: opts.Headers, HTTPClient: client})
	t.mu.Lock()
	if t.dial == d {
		t.dial = nil
	}
	abandoned := d.abandoned
	if err == nil && !abandoned {
		t.conn, t.out = c, wsbound.New(c, writeBound)
	}
	t.mu.Unlock()
	if err == nil && abandoned {
		c.CloseNow()
		return errors.New("live: could not connect to the vendor: the session ended first")
	}
	if err != nil {
		// The error names the URL and status only; never a header.
		if resp != nil {
			return errors.New("live: the vendor refused the connection with HTTP " + resp.Status)
		}
		if errors.Is(err, errRedirect) {
			return errRedirect
		}
		return errors.New("live: could not connect to the vendor: " + dialProblem(err))
	}
	c.SetReadLimit(MaxVendorFrameBytes)
	opts.OnEvent(TransportEvent{Kind: TransportOpened})
	go t.read(c, opts.OnEvent)
	return nil
}

// dialProblem says why a dial failed without echoing anything but the kind of failure.
func dialProblem(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "it did not answer in time"
	case errors.Is(err, context.Canceled):
		return "the session ended first"
	}
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) && ne.Timeout() {
		return "it did not answer in time"
	}
	return "the connection failed"
}

func (t *WebSocketTransport) read(c *websocket.Conn, onEvent func(TransportEvent)) {
	for {
		typ, b, err := c.Read(context.Background())
		if err != nil {
			code := int(websocket.CloseStatus(err))
			reason := ""
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				reason = ce.Reason
			}
			if code < 0 {
				code = int(websocket.StatusAbnormalClosure)
			}
			t.mu.Lock()
			if t.conn == c {
				t.conn, t.out = nil, nil
			}
			t.mu.Unlock()
			c.CloseNow()
			onEvent(TransportEvent{Kind: TransportClosed, Code: code, Reason: reason})
			return
		}
		onEvent(TransportEvent{Kind: TransportMessage, Data: b, Binary: typ == websocket.MessageBinary})
	}
}

// Send writes frame as a text message; it allocates nothing (see wsbound).
func (t *WebSocketTransport) Send(_ SendKind, frame []byte) error {
	t.mu.Lock()
	out := t.out
	t.mu.Unlock()
	if out == nil {
		return ErrNotConnected
	}
	return out.Write(websocket.MessageText, frame)
}

// Close closes the connection with code and reason.
func (t *WebSocketTransport) Close(code int, reason string) {
	t.mu.Lock()
	c := t.conn
	t.conn, t.out = nil, nil
	if t.dial != nil {
		t.dial.abandoned = true
		t.dial.cancel()
		t.dial = nil
	}
	t.mu.Unlock()
	if c != nil {
		go c.Close(websocket.StatusCode(code), reason)
	}
}
