package mcp

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// TestTransportErrorsBecomeRefusals: whatever the SDK's transport answers with an error status
// is answered as a refusal; a JSON-RPC error keeps its shape and gains {refused, why} as data
// (or keeps data of its own); a success passes through as it was written.
func TestTransportErrorsBecomeRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		write  func(w http.ResponseWriter)
		status int
		want   func(t *testing.T, body string)
	}{
		{"plain text", func(w http.ResponseWriter) { http.Error(w, "session user mismatch", http.StatusForbidden) }, 403, func(t *testing.T, body string) {
			var m map[string]any
			if json.Unmarshal([]byte(body), &m) != nil || m["ok"] != false || m["refused"] != "mcp-session-foreign" || m["why"] == "" {
				t.Fatalf("answered %s", body)
			}
		}},
		{"plain text of another status", func(w http.ResponseWriter) { http.Error(w, "Accept must contain both", http.StatusBadRequest) }, 400, func(t *testing.T, body string) {
			if !strings.Contains(body, `"refused":"malformed-call"`) || !strings.Contains(body, "Accept must contain both") {
				t.Fatalf("answered %s", body)
			}
		}},
		{"a JSON-RPC error", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"jsonrpc":"2.0","id":7,"error":{"code":-32001,"message":"header mismatch"}}`))
		}, 400, func(t *testing.T, body string) {
			var m struct {
				ID    int
				Error struct {
					Code    int
					Message string
					Data    struct{ Refused, Why string }
				}
			}
			if json.Unmarshal([]byte(body), &m) != nil || m.ID != 7 || m.Error.Code != -32001 || m.Error.Data.Refused != "malformed-call" || !strings.Contains(m.Error.Data.Why, "header mismatch") {
				t.Fatalf("answered %s", body)
			}
		}},
		{"a JSON-RPC error with data", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"unsupported","data":{"supported":["x"]}}}`))
		}, 400, func(t *testing.T, body string) {
			if !strings.Contains(body, `"supported":["x"]`) {
				t.Fatalf("answered %s", body)
			}
		}},
		{"a success", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("event: message\ndata: {}\n\n"))
		}, 200, func(t *testing.T, body string) {
			if body != "event: message\ndata: {}\n\n" {
				t.Fatalf("answered %q", body)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			rw := &refusalWriter{ResponseWriter: rec}
			c.write(rw)
			rw.finish()
			if rec.Code != c.status {
				t.Fatalf("status %d, want %d", rec.Code, c.status)
			}
			if c.status >= 400 && !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
				t.Fatalf("Content-Type %q", rec.Header().Get("Content-Type"))
			}
			c.want(t, rec.Body.String())
		})
	}
}

// TestWithErrorDataNamesOnlyBareErrors: an error answer with no data gains {refused, why} by its
// code, whatever its id; an error with data of its own, a result (whose content may say
// "error"), a request and anything not written the SDK's way pass untouched.
func TestWithErrorDataNamesOnlyBareErrors(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		rule string // "" when msg passes untouched
	}{
		{`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"invalid params"}}`, "invalid-argument"},
		{`{"jsonrpc":"2.0","id":"a\",\"error\":","error":{"code":-32601,"message":"no such method"}}`, "unknown-method"},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`, "malformed-json"},
		{`{"jsonrpc":"2.0","id":-1.5e3,"error":{"code":-32000,"message":"boom"}}`, "internal-error"},
		{`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"x","data":{"supported":["2025-06-18"]}}}`, ""},
		{`{"jsonrpc":"2.0","id":"x\",\"error\":","result":{"content":[{"type":"text","text":"\"error\":"}]}}`, ""},
		{`{"jsonrpc":"2.0","id":7,"result":{"error":{"code":1}}}`, ""},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}`, ""},
		{`{"id":7,"jsonrpc":"2.0","error":{"code":-32602,"message":"x"}}`, ""},
		{`{"jsonrpc":"2.0","id":"unterminated`, ""},
	} {
		got, added := withErrorData([]byte(tc.msg))
		if tc.rule == "" {
			if added || string(got) != tc.msg {
				t.Errorf("%s became %s", tc.msg, got)
			}
			continue
		}
		var m struct {
			ID    json.RawMessage `json:"id"`
			Error struct {
				Code int64           `json:"code"`
				Data refusal.Refusal `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal(got, &m); err != nil || !added || string(m.Error.Data.Rule) != tc.rule || m.Error.Data.Why == "" {
			t.Errorf("%s became %s (%v), want data refused %s", tc.msg, got, err, tc.rule)
		}
	}
	event := "event: message\nid: 3\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32602,\"message\":\"invalid params\"}}\n\n"
	got := string(eventWithErrorData([]byte(event)))
	if !strings.HasPrefix(got, "event: message\nid: 3\ndata: {") || !strings.HasSuffix(got, "}\n\n") || !strings.Contains(got, `"refused":"invalid-argument"`) {
		t.Errorf("the event became %q", got)
	}
}

// TestABatchsErrorsCarryRefusals: a batch (protocol 2025-03-26) answered as one JSON array
// carries {refused, why} as the data of each error in it, as a single answer does: here the
// SDK's error for params that do not decode (a name that is a number), raised before any
// middleware (fails when the array is passed as one message: the error has no data).
func TestABatchsErrorsCarryRefusals(t *testing.T) {
	t.Parallel()
	h := New(Options{Catalogue: fakeCatalogue{}, Clients: fakeClients{"vbm_a": {Name: "a"}}})
	defer h.Close()
	ts := httptest.NewServer(h)
	defer ts.Close()
	post := func(session, body string) (*http.Response, string) {
		t.Helper()
		return postAs(t, ts.URL, "vbm_a", "2025-03-26", session, body)
	}
	resp, _ := post("", strings.Replace(initBody, "2025-06-18", "2025-03-26", 1))
	session := resp.Header.Get("Mcp-Session-Id")
	post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	_, body := post(session, `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}},{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
	var answers []struct {
		ID    int `json:"id"`
		Error *struct {
			Data struct {
				Refused string `json:"refused"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &answers); err != nil || len(answers) != 2 {
		t.Fatalf("the batch was answered %.300s (%v)", body, err)
	}
	for _, a := range answers {
		if a.ID == 1 && (a.Error == nil || a.Error.Data.Refused == "") {
			t.Fatalf("the bad params' error carries no refusal: %.300s", body)
		}
	}
}
