package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// MaxStdioLineBytes bounds one line the bridge reads from its local client: one JSON-RPC
// message. It is /mcp's own bound on a message (MaxBodyBytes), past which the relay would refuse
// it anyway. A longer line is answered with a JSON-RPC error and skipped; the bridge reads on.
const MaxStdioLineBytes = MaxBodyBytes

// The JSON-RPC error codes the bridge answers a line with when it is not one message.
const (
	codeParseError     = -32700 // not JSON
	codeInvalidRequest = -32600 // JSON, but not one JSON-RPC message; or a line past the bound
)

// LineTransport is the bridge's side towards its local client: newline-delimited JSON-RPC on In
// and Out (the process's stdin and stdout for `relay mcp`). Where the SDK's stdio transport ends
// the connection at the first line it cannot read, a line that is not JSON is answered with a
// parse error (-32700), one that is JSON but no single JSON-RPC message (a batch among them) or
// is longer than MaxStdioLineBytes with an invalid-request error (-32600), each with id null and
// data {refused, why}, and the next line is read. The connection ends when In ends.
//
// Served by a Bridge, a LineTransport passes the client's tools/call lines to the relay as bytes
// (passer) instead of through the SDK's server.
type LineTransport struct {
	In  io.Reader
	Out io.Writer

	pass *passer // the Bridge's pass-through, when a Bridge serves it
}

// Connect implements sdk.Transport.
func (t *LineTransport) Connect(context.Context) (sdk.Connection, error) {
	c := &lineConn{out: t.Out, incoming: make(chan lineRead), closed: make(chan struct{}), pass: t.pass}
	if c.pass != nil {
		c.pass.write = c.writeLine
	}
	go c.readLines(t.In)
	return c, nil
}

// lineRead is one message read, or the error that ended the input.
type lineRead struct {
	msg jsonrpc.Message
	err error
}

type lineConn struct {
	out       io.Writer
	writeMu   sync.Mutex
	incoming  chan lineRead
	closed    chan struct{}
	closeOnce sync.Once
	pass      *passer // nil: every message goes to the SDK's server
}

// readLines reads in line by line until it ends, handing each message to Read and answering each
// line that is none.
func (c *lineConn) readLines(in io.Reader) {
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readBoundedLine(br, MaxStdioLineBytes)
		switch {
		case tooLong:
			c.refuse(codeInvalidRequest, refusal.New(refusal.BodyTooLarge, "a line is one JSON-RPC message of at most %d bytes; this one was longer and was skipped", MaxStdioLineBytes))
		case len(bytes.TrimSpace(line)) > 0:
			msg, code, rf := decodeLine(line)
			if rf != nil {
				c.refuse(code, rf)
				break
			}
			if c.pass != nil && c.pass.take(msg) {
				break
			}
			if !c.deliver(lineRead{msg: msg}) {
				return
			}
		}
		if err != nil {
			c.deliver(lineRead{err: err})
			return
		}
	}
}

// readBoundedLine reads up to the next newline. Past max bytes it reads on to the newline,
// keeping nothing, and reports tooLong.
func readBoundedLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max+1 { // the newline is not counted
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, tooLong, err
		}
	}
}

// decodeLine is the message line holds, or the error code and refusal to answer it with.
func decodeLine(line []byte) (jsonrpc.Message, int, *refusal.Refusal) {
	line = bytes.TrimSpace(line)
	if !json.Valid(line) {
		return nil, codeParseError, refusal.New(refusal.MalformedJSON, "a line that is not JSON was skipped; send one JSON-RPC message per line")
	}
	if line[0] == '[' {
		return nil, codeInvalidRequest, refusal.New(refusal.MalformedCall, "a batch was skipped; send one JSON-RPC message per line")
	}
	msg, err := decodeMessage(line)
	if err != nil {
		return nil, codeInvalidRequest, refusal.New(refusal.MalformedCall, "a line that is no JSON-RPC message was skipped: %v", err)
	}
	return msg, 0, nil
}

// decodeMessage is the JSON-RPC message of line, valid JSON, read as the SDK's
// jsonrpc.DecodeMessage reads it (member names matched exactly, "jsonrpc" "2.0", a method makes
// a request, else an id and a result or an error make a response), without its decoder: that
// starts a 32 KiB buffer for each of the two values it decodes of every line (BENCHMARKS.md).
// The members are split by one scan that skips values; only the id, the method and an error are
// decoded, and params and result are kept as they came.
func decodeMessage(line []byte) (jsonrpc.Message, error) {
	m, ok := topMembers(line)
	if !ok {
		return nil, errors.New("not a JSON object")
	}
	var version string
	if json.Unmarshal(m["jsonrpc"], &version) != nil || version != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %s; expected \"2.0\"", m["jsonrpc"])
	}
	var raw any
	if v, has := m["id"]; has {
		if err := json.Unmarshal(v, &raw); err != nil {
			return nil, err
		}
	}
	id, err := jsonrpc.MakeID(raw)
	if err != nil {
		return nil, err
	}
	if v, has := m["method"]; has {
		var method string
		if err := json.Unmarshal(v, &method); err != nil {
			return nil, fmt.Errorf("the method is no string: %w", err)
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: m["params"]}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("a response without an id")
	}
	resp := &jsonrpc.Response{ID: id, Result: m["result"]}
	if v := m["error"]; v != nil && string(v) != "null" {
		var e jsonrpc.Error
		if err := json.Unmarshal(v, &e); err != nil {
			return nil, fmt.Errorf("the error is no JSON-RPC error: %w", err)
		}
		resp.Error = &e
	}
	return resp, nil
}

// deliver hands r to Read; false once the connection is closed.
func (c *lineConn) deliver(r lineRead) bool {
	select {
	case c.incoming <- r:
		return true
	case <-c.closed:
		return false
	}
}

// refuse answers a line that is no message with a JSON-RPC error of id null.
func (c *lineConn) refuse(code int, rf *refusal.Refusal) {
	type wireError struct {
		Code    int              `json:"code"`
		Message string           `json:"message"`
		Data    *refusal.Refusal `json:"data"`
	}
	b, _ := json.Marshal(struct {
		JSONRPC string    `json:"jsonrpc"`
		ID      any       `json:"id"`
		Error   wireError `json:"error"`
	}{"2.0", nil, wireError{code, rf.Why, rf}})
	c.writeLine(b)
}

func (c *lineConn) writeLine(b []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.out.Write(append(b, '\n'))
	return err
}

// Read implements sdk.Connection.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-c.incoming:
		return r.msg, r.err
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write implements sdk.Connection.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	if c.pass != nil {
		c.pass.sent(msg)
	}
	b, _ = withErrorData(b)
	return c.writeLine(b)
}

// Close implements sdk.Connection. It leaves In and Out open: they are the process's.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// SessionID implements sdk.Connection: a local connection has none.
func (c *lineConn) SessionID() string { return "" }
