package extensionhost

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/voicebox-go/voicebox/catalogue"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/shared/extensions"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// maxDecisionBody bounds the body of a route that takes an id, a code or a decision.
const maxDecisionBody = 4 << 10

// Register adds the extension routes to srv; check is the host-token check.
//
//	GET  /api/extensions                      listing: admitted, pending, catalogue, presentNotAdmitted
//	GET  /api/extensions/catalogue            the shipped descriptors with verdicts
//	GET  /api/extensions/{proposals|catalogue}/{id}/plan
//	POST /api/extensions/sideload, /local     stage a descriptor (the body) as a proposal
//	POST /api/extensions/stage-catalogue      {id}: stage a catalogue descriptor as a proposal
//	POST /api/extensions/admit                (host token) {id, decision: "admit"|"deny", confirm: true};
//	                                          id is a proposal, or a file present in the directory
//	POST /api/extensions/approval-request     {id}: print a one-time code on the relay's console
//	POST /api/extensions/approve              {id, code}
//	POST /api/extensions/revoke               {id}
//	POST /api/extensions/dismiss              {id}: remove a waiting proposal (admits nothing)
//	POST /api/extensions/call                 (host token) {extension, tool, args}
//	POST /api/extensions/view                 {extension, tool}: a remote MCP tool's MCP Apps view
//	                                          (ReadView); a POST, since reading it spends the
//	                                          extension's requests
func (rt *Runtime) Register(srv *server.Server, check func(string) bool) {
	h := &handlers{rt: rt, check: check}
	srv.AddBridgePolicy(rt.BridgePolicy) // a view's bridge gains what its token grants (viewpolicy.go)
	srv.Handle("GET /api/extensions", http.HandlerFunc(h.list))
	srv.Handle("GET /api/extensions/catalogue", http.HandlerFunc(h.catalogue))
	srv.Handle("GET /api/extensions/{kind}/{id}/plan", http.HandlerFunc(h.plan))
	srv.Handle("POST /api/extensions/sideload", http.HandlerFunc(h.stage))
	srv.Handle("POST /api/extensions/local", http.HandlerFunc(h.stage))
	srv.Handle("POST /api/extensions/stage-catalogue", http.HandlerFunc(h.stageCatalogue))
	srv.Handle("POST /api/extensions/admit", http.HandlerFunc(h.admit))
	srv.Handle("POST /api/extensions/approval-request", http.HandlerFunc(h.approvalRequest))
	srv.Handle("POST /api/extensions/approve", http.HandlerFunc(h.approve))
	srv.Handle("POST /api/extensions/revoke", http.HandlerFunc(h.revoke))
	srv.Handle("POST /api/extensions/dismiss", http.HandlerFunc(h.dismiss))
	srv.Handle("POST /api/extensions/call", http.HandlerFunc(h.call))
	srv.Handle("POST /api/extensions/view", http.HandlerFunc(h.view))
}

// view answers a remote MCP tool's view, for the page's mini-app sandbox. Like the listing it is
// a page route: a view is shown, never run here, and its calls go through the assistant's gate.
func (h *handlers) view(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Extension string `json:"extension"`
		Tool      string `json:"tool"`
	}
	if !server.ReadJSON(w, r, maxDecisionBody, &body) {
		return
	}
	v, err := h.rt.ReadView(r.Context(), body.Extension, body.Tool)
	if err != nil {
		writeErr(w, err)
		return
	}
	server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "view": v})
}

// handlers are the extension routes, each a method.
type handlers struct {
	rt    *Runtime
	check func(string) bool // the host-token check
}

// idBody is the body of the routes that take only an extension id.
type idBody struct {
	ID string `json:"id"`
}

func (h *handlers) list(w http.ResponseWriter, r *http.Request) {
	server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "extensions": h.rt.ListExtensions()})
}

func (h *handlers) catalogue(w http.ResponseWriter, r *http.Request) {
	server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "catalogue": h.rt.Shipped()})
}

// plan answers the disclosure of a proposal (or of a descriptor file present in the state
// directory, which is admitted where it lies) or of a catalogue descriptor.
func (h *handlers) plan(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var raw []byte
	switch r.PathValue("kind") {
	case "proposals":
		_, b, _, err := h.rt.Admissions.Candidate(id)
		if err != nil {
			writeErr(w, err)
			return
		}
		raw = b
	case "catalogue":
		b, ok := catalogueRaw(id)
		if !ok {
			server.WriteRefusal(w, http.StatusNotFound, refusal.New(refusal.NotFound, "the catalogue has no %q", id))
			return
		}
		raw = b
	default:
		server.NotFound(w)
		return
	}
	server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "entry": entryOf(raw, id, extensions.Machine, h.rt.existingTools(id))})
}

// stage stages the body, a descriptor, as a proposal (sideload and local creation alike).
func (h *handlers) stage(w http.ResponseWriter, r *http.Request) {
	var raw json.RawMessage
	if !server.ReadJSON(w, r, extensions.MaxDescriptorBytes, &raw) {
		return
	}
	d, err := h.rt.Stage(raw)
	if err != nil {
		writeErr(w, err)
		return
	}
	server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "staged": d.ID, "entry": entryOf(raw, d.ID, extensions.Machine, h.rt.existingTools(d.ID))})
}

// stageCatalogue stages a shipped descriptor, with the modules it names, as a proposal.
func (h *handlers) stageCatalogue(w http.ResponseWriter, r *http.Request) {
	var body idBody
	if !server.ReadJSON(w, r, maxDecisionBody, &body) {
		return
	}
	raw, ok := catalogueRaw(body.ID)
	if !ok {
		server.WriteRefusal(w, http.StatusNotFound, refusal.New(refusal.NotFound, "the catalogue has no %q", body.ID))
		return
	}
	if err := h.rt.StageCatalogue(raw, catalogue.Files); err != nil {
		writeErr(w, err)
		return
	}
	server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "staged": body.ID})
}

// admit records the host's decision, made with the host token.
func (h *handlers) admit(w http.ResponseWriter, r *http.Request) {
	if !server.RequireHostToken(w, r, h.check) {
		return
	}
	var body struct {
		ID       string `json:"id"`
		Decision string `json:"decision"`
		Confirm  bool   `json:"confirm"`
	}
	if !server.ReadJSON(w, r, maxDecisionBody, &body) {
		return
	}
	if (body.Decision != "admit" && body.Decision != "deny") || (body.Decision == "admit" && !body.Confirm) {
		server.WriteRefusal(w, http.StatusBadRequest, refusal.New(refusal.InvalidArgument, "say decision \"admit\" with confirm true, or decision \"deny\""))
		return
	}
	plan, err := h.rt.Admissions.Decide(body.ID, body.Decision == "admit", "host-token", h.rt.existingTools(body.ID))
	if err != nil {
		writeErr(w, err)
		return
	}
	h.rt.Reload()
	h.rt.changed(map[bool]string{true: "admitted", false: "denied"}[body.Decision == "admit"], body.ID)
	server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "id": body.ID, "decision": body.Decision, "plan": plan})
}

// approvalRequest prints a one-time approval code on the relay's console, never in the response.
func (h *handlers) approvalRequest(w http.ResponseWriter, r *http.Request) {
	var body idBody
	if !server.ReadJSON(w, r, maxDecisionBody, &body) {
		return
	}
	code, err := h.rt.Admissions.RequestCode(body.ID, server.Requester(r))
	if err != nil {
		writeErr(w, err)
		return
	}
	if h.rt.Console != nil {
		fmt.Fprintf(h.rt.Console, "voicebox: approval code for extension %s: %s (valid %s; `relay approval-code` shows it again)\n", body.ID, code, CodeLifetime)
	}
	server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "id": body.ID, "expiresInMs": CodeLifetime.Milliseconds(), "where": "the relay's console"})
}

// approve admits a proposal with the console code a person read off the relay's console.
func (h *handlers) approve(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ID   string `json:"id"`
		Code string `json:"code"`
	}
	if !server.ReadJSON(w, r, maxDecisionBody, &body) {
		return
	}
	plan, err := h.rt.Admissions.Approve(body.ID, strings.TrimSpace(body.Code), server.Requester(r), h.rt.existingTools(body.ID))
	if err != nil {
		writeErr(w, err)
		return
	}
	h.rt.Reload()
	h.rt.changed("admitted", body.ID)
	server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "id": body.ID, "plan": plan})
}

// revoke takes an admission back. Revocation only takes authority away, so the page may do it
// without the host token.
func (h *handlers) revoke(w http.ResponseWriter, r *http.Request) {
	var body idBody
	if !server.ReadJSON(w, r, maxDecisionBody, &body) {
		return
	}
	if err := h.rt.Admissions.Revoke(body.ID); err != nil {
		writeErr(w, err)
		return
	}
	h.rt.Reload()
	h.rt.changed("revoked", body.ID)
	server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "id": body.ID, "revoked": true})
}

// dismiss removes a waiting proposal. Dismissing only takes it away (it admits nothing), so the
// page may do it without the host token: a proposal the gate refused, or one nobody wants.
func (h *handlers) dismiss(w http.ResponseWriter, r *http.Request) {
	var body idBody
	if !server.ReadJSON(w, r, maxDecisionBody, &body) {
		return
	}
	if err := h.rt.Admissions.Dismiss(body.ID); err != nil {
		writeErr(w, err)
		return
	}
	h.rt.changed("dismissed", body.ID)
	server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "id": body.ID, "dismissed": true})
}

// call runs an admitted extension's tool for the host (the host token), answering 200 with the
// observation or the refusal.
func (h *handlers) call(w http.ResponseWriter, r *http.Request) {
	if !server.RequireHostToken(w, r, h.check) {
		return
	}
	var body struct {
		Extension string          `json:"extension"`
		Tool      string          `json:"tool"`
		Args      json.RawMessage `json:"args"`
	}
	if !server.ReadJSON(w, r, 0, &body) {
		return
	}
	out, err := h.rt.CallExtension(r.Context(), body.Extension, body.Tool, body.Args)
	if err != nil {
		resp := map[string]any{"ok": false, "refused": refusal.RuleOf(err), "why": err.Error()}
		if rr, ok := refusal.As(err); ok {
			resp["why"] = rr.Why
		}
		if be, ok := err.(*wire.BudgetError); ok {
			resp["budget"] = be.Budget
		}
		server.WriteJSON(w, http.StatusOK, resp)
		return
	}
	server.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "observed": out})
}

// writeErr answers err: a refusal with the status its rule means, anything else as
// internal-error without its text.
func writeErr(w http.ResponseWriter, err error) {
	if r, ok := refusal.As(err); ok {
		status := http.StatusBadRequest
		switch r.Rule {
		case refusal.NotFound:
			status = http.StatusNotFound
		case refusal.PermissionDenied, refusal.ApprovalPlanChanged, refusal.ApprovalCodeWrong, refusal.ApprovalGuessesExhausted,
			refusal.ApprovalCodeExpired, refusal.ApprovalCodeUsed, refusal.ApprovalCodeMissing:
			status = http.StatusForbidden
		case refusal.ApprovalRateLimited:
			status = http.StatusTooManyRequests
		case refusal.FleetUnavailable: // a fleet's store, while NATS is away
			status = http.StatusServiceUnavailable
		}
		server.WriteRefusal(w, status, r)
		return
	}
	server.WriteRefusal(w, http.StatusInternalServerError, refusal.New(refusal.InternalError, "the relay could not update its extension state"))
}
