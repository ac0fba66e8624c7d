package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voicebox-go/voicebox/internal/shared/commands"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// ResourcePrefix starts the URI of every workspace file: voicebox://workspace/docs/plan.txt.
const ResourcePrefix = "voicebox://workspace/"

// The bounds of resources/list.
const (
	// MaxResources bounds the files one resources/list returns.
	MaxResources = 500
	// MaxResourceListings bounds the folders one resources/list reads (one list_files each).
	MaxResourceListings = 16
)

// MaxCompletions bounds the paths one completion/complete offers.
const MaxCompletions = 100

// complete offers the workspace paths that start with what the client typed, for the path of
// the workspace-file template: the entries of the folder typed so far (one list_files). Anything
// else (a prompt, another argument) has no completions.
func (h *Handler) complete(ctx context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	res := &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: []string{}}}
	ref := req.Params.Ref
	if ref == nil || ref.Type != "ref/resource" || ref.URI != ResourcePrefix+"{+path}" || req.Params.Argument.Name != "path" {
		return res, nil
	}
	typed := req.Params.Argument.Value
	dir := ""
	if i := strings.LastIndexByte(typed, '/'); i >= 0 {
		dir = typed[:i]
	}
	args := json.RawMessage(`{}`)
	if dir != "" {
		args, _ = json.Marshal(map[string]string{"dir": dir})
	}
	var l listing
	json.Unmarshal(h.opts.Catalogue.Call(h.attributed(ctx, req.Extra), commands.ListFiles, args), &l)
	for _, e := range l.Entries {
		p := e.Path
		if e.Dir {
			p += "/"
		}
		if !strings.HasPrefix(p, typed) {
			continue
		}
		if len(res.Completion.Values) == MaxCompletions {
			res.Completion.HasMore = true
			break
		}
		res.Completion.Values = append(res.Completion.Values, p)
	}
	return res, nil
}

// CodeRefused is the JSON-RPC error code of a resource read the workspace refused; the
// message is "rule: why".
const CodeRefused = -32001

func (h *Handler) addResources() {
	h.server.AddResourceTemplate(&sdk.ResourceTemplate{
		Name:        "workspace-file",
		Title:       "A file of the workspace",
		Description: "A file in the Voicebox workspace, by its path (relative, slash-separated). Text comes back as text, anything else as a blob; at most the first 64 KiB.",
		URITemplate: ResourcePrefix + "{+path}",
	}, h.readResource)
	h.server.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method != "resources/list" {
				return next(ctx, method, req)
			}
			return h.listResources(h.attributed(ctx, req.GetExtra()))
		}
	})
}

func (h *Handler) attributed(ctx context.Context, extra *sdk.RequestExtra) context.Context {
	if h.opts.Attribute == nil || extra == nil || extra.TokenInfo == nil {
		return ctx
	}
	return h.opts.Attribute(ctx, extra.TokenInfo.UserID)
}

// listing is list_files' observation, as far as resources need it.
type listing struct {
	Refused refusal.Rule `json:"refused"`
	Why     string       `json:"why"`
	Entries []struct {
		Path string `json:"path"`
		Dir  bool   `json:"dir"`
		Size int64  `json:"size"`
	} `json:"entries"`
}

// listResources walks the workspace breadth first through list_files. A workspace that cannot be
// listed (no root, no page) lists no resources.
func (h *Handler) listResources(ctx context.Context) (*sdk.ListResourcesResult, error) {
	res := &sdk.ListResourcesResult{Resources: []*sdk.Resource{}}
	dirs := []string{""}
	for read := 0; len(dirs) > 0 && read < MaxResourceListings && len(res.Resources) < MaxResources; read++ {
		dir := dirs[0]
		dirs = dirs[1:]
		args := json.RawMessage(`{}`)
		if dir != "" {
			args, _ = json.Marshal(map[string]string{"dir": dir})
		}
		var l listing
		json.Unmarshal(h.opts.Catalogue.Call(ctx, commands.ListFiles, args), &l)
		if l.Refused != "" {
			break
		}
		for _, e := range l.Entries {
			if e.Dir {
				dirs = append(dirs, e.Path)
				continue
			}
			if len(res.Resources) == MaxResources {
				break
			}
			res.Resources = append(res.Resources, &sdk.Resource{URI: resourceURI(e.Path), Name: e.Path, Size: e.Size, MIMEType: mimeOf(e.Path, nil)})
		}
	}
	return res, nil
}

// resourceURI returns the URI of the workspace file p, each segment escaped.
func resourceURI(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return ResourcePrefix + strings.Join(segs, "/")
}

// read is read_file's observation.
type read struct {
	Refused  refusal.Rule `json:"refused"`
	Why      string       `json:"why"`
	Path     string       `json:"path"`
	Encoding string       `json:"encoding"`
	Content  string       `json:"content"`
}

func (h *Handler) readResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	p, err := url.PathUnescape(strings.TrimPrefix(uri, ResourcePrefix))
	if err != nil || !strings.HasPrefix(uri, ResourcePrefix) {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	args, _ := json.Marshal(map[string]string{"name": p})
	var r read
	json.Unmarshal(h.opts.Catalogue.Call(h.attributed(ctx, req.Extra), commands.ReadFile, args), &r)
	switch {
	case r.Refused == refusal.NotFound:
		return nil, sdk.ResourceNotFoundError(uri)
	case r.Refused != "":
		return nil, refusedError(refusal.New(r.Refused, "%s", r.Why))
	}
	c := &sdk.ResourceContents{URI: uri}
	if r.Encoding == "base64" {
		b, err := base64.StdEncoding.DecodeString(r.Content)
		if err != nil {
			return nil, refusedError(refusal.New(refusal.InternalError, "the file's content came back in base64 that does not decode"))
		}
		c.Blob, c.MIMEType = b, mimeOf(p, b)
	} else {
		c.Text, c.MIMEType = r.Content, mimeOf(p, []byte(r.Content))
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{c}}, nil
}

// refusedError is a refusal as the JSON-RPC error of a resource read: code CodeRefused, message
// "rule: why", data {"refused", "why"}.
func refusedError(r *refusal.Refusal) error {
	return &jsonrpc.Error{Code: CodeRefused, Message: r.Error(), Data: refusalJSON(r)}
}

// mimeOf guesses a file's type from its name, else from its first bytes (when given).
func mimeOf(name string, head []byte) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	if head != nil {
		return http.DetectContentType(head)
	}
	return ""
}
