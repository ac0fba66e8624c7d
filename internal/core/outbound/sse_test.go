package outbound_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/outbound"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// stream serves one SSE stream per request, handing the stream to the test on streams, and
// sends the reason Serve returned on ended.
func stream(t *testing.T) (url string, streams chan *outbound.SSE, ended chan *refusal.Refusal) {
	t.Helper()
	streams, ended = make(chan *outbound.SSE, 1), make(chan *refusal.Refusal, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := outbound.NewSSE(w, r, nil)
		s.Header().Set("Content-Type", "text/event-stream")
		s.WriteHeader(http.StatusOK)
		s.Flush()
		streams <- s
		ended <- s.Serve(r.Context().Done(), 0)
	}))
	srv.Listener = smallSendBuffers{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL, streams, ended
}

// smallSendBuffers gives each accepted connection the send buffer the relay's streams have
// (outbound.SendBuffer; internal/core/server sets it there), so a reader that stops fills it at once.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(outbound.SendBuffer)
	}
	return c, err
}

// TestEventsArriveInOrderAndLeadFirst: what is queued arrives in order, a lead before it, and End
// ends the stream once it is written.
func TestEventsArriveInOrderAndLeadFirst(t *testing.T) {
	t.Parallel()
	url, streams, ended := stream(t)
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	s := <-streams
	for _, e := range []string{"a", "b", "c"} {
		s.Send([]byte("data: " + e + "\n\n"))
	}
	s.Lead([]byte("data: hello\n\n"))
	s.End()
	var got []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			got = append(got, d)
		}
	}
	if strings.Join(got, ",") != "hello,a,b,c" {
		t.Fatalf("the reader got %v", got)
	}
	if why := <-ended; why != nil {
		t.Fatalf("an ended stream returned %v", why)
	}
}

// TestAQueuePastItsBoundIsClosedSlowReader: a writer that queues more than QueueMessages for a
// reader that does not read is never made to wait; the stream is closed slow-reader and later
// sends report false.
func TestAQueuePastItsBoundIsClosedSlowReader(t *testing.T) {
	t.Parallel()
	url, streams, ended := stream(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")) // and never read
	s := <-streams
	big := []byte("data: " + strings.Repeat("x", 64<<10) + "\n\n")
	sent := 0
	for s.Send(big) {
		sent++
		if sent > outbound.QueueBytes/len(big)+outbound.QueueMessages {
			t.Fatal("the queue took more than its bound")
		}
	}
	select {
	case why := <-ended:
		if refusal.RuleOf(why) != refusal.SlowReader {
			t.Fatalf("the stream ended with %v, want slow-reader", why)
		}
	case <-time.After(4 * outbound.WriteBound):
		t.Fatal("the stream was not closed")
	}
	if s.Send([]byte("data: late\n\n")) {
		t.Fatal("a send to a closed stream was queued")
	}
}

// TestAStoppedReaderMeetsTheWriteBound: a reader that takes nothing while a few events are
// queued (well within the queue's bounds) is closed slow-reader by WriteBound once its socket is
// full.
func TestAStoppedReaderMeetsTheWriteBound(t *testing.T) {
	t.Parallel()
	url, streams, ended := stream(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(4096)
	conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	s := <-streams
	// Far more than the kernel's buffers hold, far less than the queue's bound.
	big := []byte("data: " + strings.Repeat("x", 1<<20) + "\n\n")
	for range outbound.QueueBytes / len(big) / 2 {
		if !s.Send(big) {
			t.Fatal("the queue was full within its bound")
		}
	}
	select {
	case why := <-ended:
		if refusal.RuleOf(why) != refusal.SlowReader || !strings.Contains(why.Why, "took no bytes") {
			t.Fatalf("the stream ended with %v, want slow-reader for the write bound", why)
		}
	case <-time.After(4 * outbound.WriteBound):
		t.Fatal("the stream was not closed")
	}
}

// TestLastEndsTheStream: Last alone is the whole response, sent with its Content-Length (no
// chunked end follows it); after another message it is written as Send writes, the response stays
// chunked, and either way the stream ends with it and a later send is refused.
func TestLastEndsTheStream(t *testing.T) {
	t.Parallel()
	for _, first := range []string{"", "data: a\n\n"} {
		streams := make(chan *outbound.SSE, 1)
		ended := make(chan *refusal.Refusal, 1)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s := outbound.NewSSE(w, r, nil)
			s.Header().Set("Content-Type", "text/event-stream")
			if first != "" {
				s.Send([]byte(first))
			}
			if !s.Last([]byte("data: last\n\n")) {
				t.Error("Last was refused by an open stream")
			}
			if s.Send([]byte("data: late\n\n")) {
				t.Error("a send after Last was queued")
			}
			streams <- s
			ended <- s.Serve(r.Context().Done(), 0)
		}))
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		<-streams
		if why := <-ended; why != nil || err != nil {
			t.Fatalf("the stream ended with %v, the read with %v", why, err)
		}
		if string(body) != first+"data: last\n\n" {
			t.Fatalf("the reader got %q", body)
		}
		whole := resp.ContentLength == int64(len(body)) && len(resp.TransferEncoding) == 0
		if whole != (first == "") {
			t.Fatalf("after %q: Content-Length %d, transfer encoding %v", first, resp.ContentLength, resp.TransferEncoding)
		}
		srv.Close()
	}
}

// TestOnDemandStartsItsWriterForAnEvent: a stream served on demand writes an event as soon as it
// is queued, while its handler still runs (a notification before a call's answer), and ends
// with the Last message after it; the writer's goroutine is started by the event.
func TestOnDemandStartsItsWriterForAnEvent(t *testing.T) {
	t.Parallel()
	read := make(chan struct{})
	ended := make(chan *refusal.Refusal, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := outbound.NewSSE(w, r, nil)
		s.Header().Set("Content-Type", "text/event-stream")
		s.ServeOnDemand(r.Context().Done())
		s.Send([]byte("data: progress\n\n"))
		select {
		case <-read: // the reader had the event before the handler went on
		case <-time.After(outbound.WriteBound):
			t.Error("the event was not written while the handler ran: no writer was started for it")
		}
		s.Last([]byte("data: answer\n\n"))
		ended <- s.Finish()
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "data: progress\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	close(read)
	rest, err := io.ReadAll(br)
	if why := <-ended; why != nil || err != nil || string(rest) != "\ndata: answer\n\n" {
		t.Fatalf("the rest %q (%v); the stream ended with %v", rest, err, why)
	}
}

// TestOnDemandWritesALastAloneInFinish: a response that is one Last message alone is written by
// Finish, on the handler's goroutine, whole and with its Content-Length.
func TestOnDemandWritesALastAloneInFinish(t *testing.T) {
	t.Parallel()
	ended := make(chan *refusal.Refusal, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := outbound.NewSSE(w, r, nil)
		s.Header().Set("Content-Type", "text/event-stream")
		s.ServeOnDemand(r.Context().Done())
		s.Last([]byte("data: answer\n\n"))
		s.Flush() // as the SDK flushes after its event: refused, the stream has ended
		ended <- s.Finish()
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if why := <-ended; why != nil || err != nil || string(body) != "data: answer\n\n" {
		t.Fatalf("body %q (%v); the stream ended with %v", body, err, why)
	}
	if resp.ContentLength != int64(len(body)) {
		t.Fatalf("Content-Length %d; want %d", resp.ContentLength, len(body))
	}
}
