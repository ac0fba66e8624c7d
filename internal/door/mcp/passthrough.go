package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The bounds of the bridge's pass-through of tools/call (passer).
const (
	// MaxBridgedCalls bounds the tools/call requests the bridge has passed to the relay and not
	// yet answered; one more is answered at once with the tool result too-many-calls, as /mcp
	// answers a client past MaxCallsPerClient.
	MaxBridgedCalls = MaxCallsPerClient
	// MaxBridgedAnswerBytes bounds one message of the relay's answer to a passed call (a tool
	// result, or a notification before it); a longer one ends the call with internal-error.
	MaxBridgedAnswerBytes = 16 << 20
	// CancelNoticeBound bounds how long the bridge spends telling the relay that the local
	// client cancelled a passed call.
	CancelNoticeBound = 5 * time.Second
	// maxDrainBytes bounds what the bridge reads of an answer's stream past the answer, so its
	// connection to the relay is kept for the next call; past it the connection is closed.
	maxDrainBytes = 64 << 10
	// drainBound bounds how long the bridge reads an answer's stream past the answer.
	drainBound = time.Second
	// maxIdleWorkers bounds the goroutines that wait for the next passed call (run).
	maxIdleWorkers = 4
)

// BridgeProcs is how many threads run the Go code of `relay mcp` at once (its GOMAXPROCS, unless
// the environment sets one). The bridge moves one message at a time between its client and the
// relay; with a second processor, the goroutines each message wakes in turn (the line read, the
// call, the HTTP client's writer and reader) are handed between threads, each hand-off a wake-up.
// With Go's own collector (cmd/relay tunesCollector), one processor took about a fifth off the
// bridge's CPU per read (BENCHMARKS.md, "relay mcp made lean").
const BridgeProcs = 1

// passer is how `relay mcp` answers its local client's tools/call: the line goes to the relay's
// /mcp as it came but for its id (the bridge's own, so it never meets the ids of the bridge's
// SDK session on the same relay session), and the relay's answer comes back as one line with
// the client's id, its result never decoded. What the SDK's server of the bridge checked before
// is kept: nothing passes before the client has initialized, an initialize the SDK's server
// answered with a result and then notifications/initialized (until then the SDK answers, and
// refuses), an id already being answered is refused as the SDK refuses it, every passed call
// gets exactly one answer (the relay's, or an error naming why there is none), the notifications
// the relay sends on the call's stream (progress, log lines) are passed on before it, and
// notifications/cancelled of a passed call stops it here and at the relay.
type passer struct {
	endpoint string // the relay's /mcp
	session  string // the Mcp-Session-Id of the bridge's session on the relay
	bearer   string // the client's bearer, sent with every request
	protocol string // the protocol version that session speaks
	http     *http.Client
	log      *slog.Logger
	ctx      context.Context // ends when the bridge stops; every passed call ends with it

	write func([]byte) error // one line to the local client

	mu         sync.Mutex
	initialize jsonrpc.ID // the id of the client's latest initialize
	asked      bool       // the SDK's server answered an initialize with a result
	ready      bool       // and then the client sent notifications/initialized
	seq        uint64
	calls      map[string]*passedCall // the client's id, as JSON -> its call
	wg         sync.WaitGroup

	idle   chan func()  // an idle worker takes a call here (run)
	idlers atomic.Int32 // the workers waiting on idle
}

// passedCall is a tools/call the relay has not answered yet.
type passedCall struct {
	wire   string // the id the relay knows it by
	cancel context.CancelFunc
	// cancelled is set when the client cancelled it.
	cancelled bool
}

// take handles msg when it is the pass-through's: a tools/call once the client has initialized,
// or the cancellation of a passed call. It reports false for anything the SDK's server answers.
func (p *passer) take(msg jsonrpc.Message) bool {
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return false
	}
	switch {
	case req.Method == "initialize" && req.IsCall():
		p.mu.Lock()
		p.initialize = req.ID
		p.mu.Unlock()
		return false // the SDK's server answers it; sent sees the answer
	case req.Method == "notifications/initialized" && !req.IsCall():
		p.mu.Lock()
		p.ready = p.asked // an initialized before any initialize opens nothing
		p.mu.Unlock()
		return false // the SDK's server records it too
	case req.Method == "notifications/cancelled" && !req.IsCall():
		return p.cancel(req.Params)
	case req.Method == "tools/call" && req.IsCall():
		return p.call(req)
	}
	return false
}

// sent sees each message the SDK's server writes to the client: a result answering the
// client's initialize lets notifications/initialized open the pass-through.
func (p *passer) sent(msg jsonrpc.Message) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.initialize.IsValid() && resp.ID == p.initialize {
		p.asked = true
	}
}

// call starts passing req to the relay; false when the client has not initialized.
func (p *passer) call(req *jsonrpc.Request) bool {
	id, err := json.Marshal(req.ID.Raw())
	if err != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case !p.ready:
		return false
	case p.calls[string(id)] != nil:
		// As the SDK answers an id in use: the error is not the earlier call's answer.
		p.answer([]byte("null"), errorMember(jsonrpc.CodeInvalidRequest,
			refusal.New(refusal.MalformedCall, "request id %s is already in use by a call not answered yet; give each request an id of its own", id)))
		return true
	case len(p.calls) >= MaxBridgedCalls:
		b, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": string(refusalJSON(refusal.New(refusal.TooManyCalls,
			"this client has %d tool calls running through relay mcp, its bound; wait for one to answer", MaxBridgedCalls)))}}, "isError": true})
		p.answer(id, append([]byte(`"result":`), b...))
		return true
	}
	p.seq++
	ctx, cancel := context.WithCancel(p.ctx)
	c := &passedCall{wire: fmt.Sprintf("relay-mcp-%d", p.seq), cancel: cancel}
	p.calls[string(id)] = c
	p.wg.Add(1)
	p.run(func() {
		defer p.wg.Done()
		defer cancel()
		member, rest := p.relay(ctx, c, req.Params)
		p.mu.Lock()
		delete(p.calls, string(id))
		cancelled := c.cancelled
		p.mu.Unlock()
		switch {
		case cancelled:
			p.tellCancelled(c.wire)
			if member == nil {
				member = errorMember(jsonrpc.CodeInternalError, refusal.New(refusal.InternalError,
					"the client cancelled this call before the relay answered; the relay was told to stop it"))
			}
		case member == nil: // the bridge is stopping
			member = errorMember(jsonrpc.CodeInternalError, refusal.New(refusal.InternalError,
				"relay mcp stopped before the relay answered this call; it may or may not have run"))
		}
		p.answer(id, member)
		if rest != nil {
			// The relay ends the stream right after the answer: read it to its end, so the
			// connection is kept for the next call rather than closed and dialled again.
			// A stream kept open past drainBound is cut (the call's context ends).
			stop := time.AfterFunc(drainBound, cancel)
			io.Copy(io.Discard, io.LimitReader(rest, maxDrainBytes))
			rest.Close()
			stop.Stop()
		}
	})
	return true
}

// run runs a passed call on an idle worker, or on a new one when none is idle. A worker keeps
// its goroutine, and the stack the HTTP client grew it to, for the next call, where a goroutine
// of its own per call grew a fresh stack each time; at most maxIdleWorkers wait idle, the others
// end.
func (p *passer) run(call func()) {
	select {
	case p.idle <- call:
	default:
		go p.work(call)
	}
}

func (p *passer) work(call func()) {
	for {
		call()
		if p.idlers.Add(1) > maxIdleWorkers {
			p.idlers.Add(-1)
			return
		}
		select {
		case call = <-p.idle:
			p.idlers.Add(-1)
		case <-p.ctx.Done():
			p.idlers.Add(-1)
			return
		}
	}
}

// cancel stops the passed call params names; false when it names none (the SDK's server may hold
// it).
func (p *passer) cancel(params json.RawMessage) bool {
	var n struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &n) != nil || n.RequestID == nil {
		return false
	}
	id, _ := json.Marshal(n.RequestID)
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.calls[string(id)]
	if c == nil {
		return false
	}
	c.cancelled = true
	c.cancel()
	return true
}

// answer writes the one answer of the client's request id: member is its "result":... or
// "error":... member, as JSON.
func (p *passer) answer(id, member []byte) {
	line := make([]byte, 0, len(member)+len(id)+32)
	line = append(line, `{"jsonrpc":"2.0","id":`...)
	line = append(line, id...)
	line = append(line, ',')
	line = append(line, member...)
	line = append(line, '}')
	if err := p.write(line); err != nil {
		p.log.Warn("mcp bridge: an answer could not be written to the client", "err", err)
	}
}

// errorMember is the "error":... member of a JSON-RPC error answer carrying rf as its data.
func errorMember(code int64, rf *refusal.Refusal) []byte {
	b, _ := json.Marshal(&jsonrpc.Error{Code: code, Message: rf.Error(), Data: refusalJSON(rf)})
	return append([]byte(`"error":`), b...)
}

// relay posts the call to the relay and reads its answer, passing on the notifications before
// it. It returns the answer's result or error member; nil when the client cancelled first.
func (p *passer) relay(ctx context.Context, c *passedCall, params json.RawMessage) (member []byte, rest io.ReadCloser) {
	// The client's params as they came (its line was checked to be JSON), in the bridge's request.
	body := make([]byte, 0, len(params)+len(c.wire)+64)
	body = append(body, `{"jsonrpc":"2.0","id":"`...)
	body = append(body, c.wire...)
	body = append(body, `","method":"tools/call"`...)
	if len(params) > 0 {
		body = append(append(append(body, `,"params":`...), params...), '}')
	} else {
		body = append(body, '}')
	}
	resp, err := p.post(ctx, body)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil
		}
		if rf, ok := refusal.As(err); ok {
			return errorMember(jsonrpc.CodeInternalError, rf), nil
		}
		return errorMember(jsonrpc.CodeInternalError, refusal.New(refusal.InternalError, "the relay did not take the call: %v", err)), nil
	}
	if resp.StatusCode >= http.StatusBadRequest {
		return errorOfStatus(resp), resp.Body
	}
	br := answerReaders.Get().(*bufio.Reader)
	br.Reset(resp.Body)
	defer func() { br.Reset(nil); answerReaders.Put(br) }()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		msg, tooLong, _ := readBoundedLine(br, MaxBridgedAnswerBytes)
		return p.answerOf(c, msg, tooLong), resp.Body
	}
	for {
		data, tooLong, err := readEvent(br)
		if len(data) > 0 || tooLong {
			if member := p.answerOf(c, data, tooLong); member != nil {
				return member, resp.Body
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, resp.Body
			}
			return errorMember(jsonrpc.CodeInternalError, refusal.New(refusal.InternalError, "the relay's answer ended before the call's result came (%v); the call may or may not have run", err)), resp.Body
		}
	}
}

// answerReaders are the buffered readers of the relay's answers, one per call at a time, kept
// between calls rather than allocated for each.
var answerReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 32<<10) }}

// post sends one JSON-RPC message of the bridge's session to the relay.
func (p *passer) post(ctx context.Context, body []byte) (*http.Response, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Mcp-Session-Id", p.session)
	r.Header.Set("Mcp-Protocol-Version", p.protocol)
	r.Header.Set("Authorization", "Bearer "+p.bearer) // a refusal of it is read by errorOfStatus
	return p.http.Do(r)
}

// tellCancelled tells the relay the client cancelled the call it knows as wire.
func (p *passer) tellCancelled(wire string) {
	ctx, cancel := context.WithTimeout(context.Background(), CancelNoticeBound)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
		"params": map[string]string{"requestId": wire, "reason": "the client of relay mcp cancelled it"}})
	resp, err := p.post(ctx, body)
	if err != nil {
		p.log.Warn("mcp bridge: the relay could not be told of a cancelled call", "err", err)
		return
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxRefusalBytes))
	resp.Body.Close()
}

// answerOf reads one message of the relay's answer to c: the call's answer gives its result or
// error member; a notification is passed on to the client and gives nil, as does anything else
// (a request of the relay's, which the bridge does not relay, is logged).
func (p *passer) answerOf(c *passedCall, msg []byte, tooLong bool) []byte {
	if tooLong {
		return errorMember(jsonrpc.CodeInternalError, refusal.New(refusal.BodyTooLarge, "the relay's answer to this call was longer than %d bytes, the bound of relay mcp", MaxBridgedAnswerBytes))
	}
	m, ok := topMembers(msg) // one scan that skips values: the result is never decoded
	if !ok {
		return errorMember(jsonrpc.CodeInternalError, refusal.New(refusal.InternalError, "the relay answered something that is not a JSON-RPC message"))
	}
	method, id := m["method"], m["id"]
	switch {
	case method != nil && id == nil:
		var line bytes.Buffer
		if json.Compact(&line, msg) == nil {
			p.write(line.Bytes())
		}
	case method != nil:
		p.log.Warn("mcp bridge: the relay asked something of the client during a call; relay mcp does not relay it", "method", string(method))
	case string(id) != `"`+c.wire+`"`:
		p.log.Warn("mcp bridge: the relay answered another id on a call's stream", "id", string(id))
	case m["error"] != nil:
		return oneLine("error", m["error"])
	case m["result"] != nil:
		return oneLine("result", m["result"])
	default:
		return errorMember(jsonrpc.CodeInternalError, refusal.New(refusal.InternalError, "the relay's answer to this call had neither result nor error"))
	}
	return nil
}

// oneLine is the member "name":value, on one line: an event's data on several lines comes
// joined by newlines, which would end the client's line early, so such a value is compacted; a
// value that is not JSON is an internal error.
func oneLine(name string, value []byte) []byte {
	member := make([]byte, 0, len(name)+3+len(value))
	member = append(append(append(member, '"'), name...), '"', ':')
	if bytes.IndexAny(value, "\r\n") < 0 {
		return append(member, value...)
	}
	var b bytes.Buffer
	if json.Compact(&b, value) != nil {
		return errorMember(jsonrpc.CodeInternalError, refusal.New(refusal.InternalError, "the relay's answer to this call was not JSON"))
	}
	return append(member, b.Bytes()...)
}

// errorOfStatus is the error member of a refused POST: the relay's JSON-RPC error as it is, or
// its refusal {"refused", "why"} as the data of one.
func errorOfStatus(resp *http.Response) []byte {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxRefusalBytes))
	var m struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(b, &m) == nil && m.Error != nil {
		return append([]byte(`"error":`), m.Error...)
	}
	var rf refusal.Refusal
	if json.Unmarshal(b, &rf) != nil || rf.Rule == "" {
		rf = *refusal.New(refusal.InternalError, "the relay answered %s", resp.Status)
	}
	return errorMember(jsonrpc.CodeInternalError, &rf)
}

// readEvent reads one server-sent event and returns its data (its data lines joined by a newline,
// within MaxBridgedAnswerBytes); tooLong when it was longer and was skipped.
func readEvent(br *bufio.Reader) (data []byte, tooLong bool, err error) {
	for {
		line, long, err := readBoundedLine(br, MaxBridgedAnswerBytes)
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case long:
			tooLong, data = true, nil
		case len(line) == 0 && err == nil:
			return data, tooLong, nil // the event's end
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
			if tooLong || len(data)+len(v)+1 > MaxBridgedAnswerBytes {
				tooLong, data = true, nil
			} else {
				if data != nil {
					data = append(data, '\n')
				}
				data = append(data, v...)
			}
		}
		if err != nil {
			return data, tooLong, err
		}
	}
}
