package assistant

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/voicebox-go/voicebox/internal/core/hub"
	"github.com/voicebox-go/voicebox/internal/shared/commands"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// The calls the page's worker answers besides the executor's primitives: the mini-app store and
// frames (internal/engine/miniapps.go). Mini-app tools go to it under their model-facing names.
const (
	pageListMiniApps  = "list-mini-apps"
	pageLaunchMiniApp = "launch-mini-app"
	pageCreateMiniApp = "create-mini-app"
)

// route runs one action where it can run and returns its observation or refusal.
func (c *Tools) route(ctx context.Context, a commands.Action) (json.RawMessage, error) {
	switch a.Verb() {
	case commands.ReadFile:
		return c.onRoot(ctx, executor.ReadFile, texts(map[string]string{"path": a.String("name")}, a, "head", "tail"))
	case commands.ReadFiles:
		return c.onRoot(ctx, executor.ReadFiles, map[string]string{"paths": a.Text("names")})
	case commands.ReadMediaFile:
		return c.onRoot(ctx, executor.ReadMedia, map[string]string{"path": a.String("name")})
	case commands.MoveFile:
		return c.onRoot(ctx, executor.MoveFile, map[string]string{"path": a.String("from"), "to": a.String("to")})
	case commands.CreateFolder:
		return c.onRoot(ctx, executor.CreateFolder, map[string]string{"path": a.String("name")})
	case commands.FileInfo:
		return c.onRoot(ctx, executor.FileInfo, map[string]string{"path": a.String("name")})
	case commands.DirectoryTree:
		return c.onRoot(ctx, executor.DirectoryTree, texts(optional(map[string]string{}, "dir", a), a, "depth"))
	case commands.WriteFile:
		return c.onRoot(ctx, executor.WriteFile, map[string]string{"path": a.String("name"), "content": a.String("content")})
	case commands.ListFiles:
		return c.onRoot(ctx, executor.ListFiles, optional(map[string]string{}, "dir", a))
	case commands.EditFile:
		return c.onRoot(ctx, executor.EditFile, texts(optional(optional(map[string]string{"path": a.String("name")}, "oldText", a), "newText", a), a, "oldTexts", "newTexts", "dryRun"))
	case commands.GrepFiles:
		return c.onRoot(ctx, executor.GrepFiles, optional(map[string]string{"query": a.String("query")}, "dir", a))
	case commands.UndoLastAction:
		return c.onRoot(ctx, executor.UndoLast, map[string]string{})
	case commands.RedoLastAction:
		return c.onRoot(ctx, executor.RedoLast, map[string]string{})
	case commands.DeleteFile:
		return c.deleteFile(ctx, a.String("name"))
	case commands.ListMiniApps:
		return c.onPage(ctx, pageListMiniApps, json.RawMessage(`{}`))
	case commands.LaunchMiniApp, commands.CreateMiniApp:
		tool := map[string]string{commands.LaunchMiniApp: pageLaunchMiniApp, commands.CreateMiniApp: pageCreateMiniApp}[a.Verb()]
		return c.onPage(ctx, tool, a.Args)
	case commands.ListExtensions, commands.CallExtension, commands.ProposeExtension:
		return c.extension(ctx, a)
	case commands.DiffFile:
		return c.onRoot(ctx, executor.DiffFile, map[string]string{"path": a.String("name"), "content": a.String("content")})
	case commands.ListTools:
		return json.Marshal(commands.ListIndex(c.index(), a.String("kind")))
	case commands.SearchTools:
		return json.Marshal(commands.SearchIndex(c.index(), a.String("query"), a.String("kind"), a.Int("limit")))
	}
	if !a.Tool.Builtin {
		return c.onPage(ctx, a.Verb(), a.Args)
	}
	return nil, refusal.New(refusal.UnknownTool, "the relay has no route for %q", a.Verb())
}

// texts adds each of keys that a has to m as JSON text (numbers, booleans and arrays travel to
// the primitives as strings).
func texts(m map[string]string, a commands.Action, keys ...string) map[string]string {
	for _, k := range keys {
		if a.Has(k) {
			m[k] = a.Text(k)
		}
	}
	return m
}

func optional(m map[string]string, key string, a commands.Action) map[string]string {
	if a.Has(key) {
		m[key] = a.String(key)
	}
	return m
}

// onRoot runs a primitive on the root's executor.
func (c *Tools) onRoot(ctx context.Context, prim executor.Primitive, args map[string]string) (json.RawMessage, error) {
	if r := c.declared(); r != nil {
		return nil, r
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, refusal.New(refusal.InternalError, "the arguments could not be encoded")
	}
	return c.ask(ctx, string(prim), raw)
}

// onPage runs a call the page's worker answers (the mini-app store and tools). A machine
// environment holds no frames, so while one holds the root these are refused no-page.
func (c *Tools) onPage(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	if r := c.declared(); r != nil {
		return nil, r
	}
	if root := c.opts.Holder.Holding(); root.Kind == hub.RootMachine {
		return nil, refusal.New(refusal.NoPage, "mini-apps run in the page, and the machine environment %q holds the workspace now; press \"Use this tab\" in the page to bring it back", root.Name)
	}
	return c.ask(ctx, tool, args)
}

func (c *Tools) declared() *refusal.Refusal {
	if c.opts.Holder.Holding().Kind == "" {
		return refusal.New(refusal.RootNotDeclared, "no workspace is open: open the Voicebox page and choose a folder (or browser storage), or connect a paired machine environment")
	}
	return nil
}

func (c *Tools) ask(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	call := wire.Call{CallID: c.opts.Holder.NewCallID(), Tool: tool, DescriptorID: executor.BuiltinDescriptor, Args: args, BoundsEcho: json.RawMessage(`{}`)}
	a := c.opts.Holder.Ask(ctx, call)
	if err := a.Err(); err != nil {
		return nil, err
	}
	return a.Observed, nil
}

// deleteFile asks the user before it deletes. What cannot be deleted is refused first, so nobody
// is asked about a file that is not there.
func (c *Tools) deleteFile(ctx context.Context, name string) (json.RawMessage, error) {
	if r := c.declared(); r != nil {
		return nil, r
	}
	asked := c.opts.Holder.Holding()
	probe, _ := json.Marshal(map[string]string{"path": name})
	seen, err := c.ask(ctx, string(executor.ReadFile), probe)
	if err != nil {
		return nil, err
	}
	var size struct {
		Size int64 `json:"size"`
	}
	json.Unmarshal(seen, &size)
	summary := fmt.Sprintf("Delete %s (%s)?", name, byteSize(size.Size))
	if err := c.approvals.wait(ctx, commands.DeleteFile, summary, c.opts.ApprovalTimeout); err != nil {
		return nil, err
	}
	if r := c.sameRoot(asked); r != nil {
		return nil, r
	}
	args, _ := json.Marshal(map[string]string{"path": name})
	out, err := c.ask(ctx, string(executor.DeleteFile), args)
	if err != nil {
		return nil, err
	}
	return withApproval(out), nil
}

// sameRoot refuses root-changed when another executor holds the root than asked did: what the
// person approved was about asked's folder.
func (c *Tools) sameRoot(asked hub.Holding) *refusal.Refusal {
	if now := c.opts.Holder.Holding(); now.Kind != asked.Kind || now.Name != asked.Name {
		return refusal.New(refusal.RootChanged, "while you were asked, %q (%s) took the workspace from %q (%s), so nothing was done there", now.Name, now.Kind, asked.Name, asked.Kind)
	}
	return nil
}

// existing refuses file-exists when name is a file of the workspace, for a typed create, which
// asks for a new file and must not replace one. Anything else (no root, nothing there, a folder)
// is left to the write, which answers for itself.
func (c *Tools) existing(ctx context.Context, name string) *refusal.Refusal {
	if c.declared() != nil {
		return nil
	}
	probe, _ := json.Marshal(map[string]string{"path": name})
	if _, err := c.ask(ctx, string(executor.ReadFile), probe); err != nil {
		return nil
	}
	return refusal.New(refusal.FileExists, "%s already exists, and create makes a new file; to replace its content, say write %s: and the text", name, name)
}

// withApproval adds "approval": "approved" to an observation object.
func withApproval(obs json.RawMessage) json.RawMessage {
	if len(obs) < 2 || obs[0] != '{' {
		return obs
	}
	tail := `,"approval":"approved"}`
	if len(obs) == 2 {
		tail = tail[1:]
	}
	out := make([]byte, 0, len(obs)+len(tail))
	out = append(out, obs[:len(obs)-1]...)
	return append(out, tail...)
}

func byteSize(n int64) string {
	switch {
	case n == 1:
		return "1 byte"
	case n < 1024:
		return strconv.FormatInt(n, 10) + " bytes"
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// index is the unified tool index list_tools and search_tools answer from: the tools of the
// current set, then the extensions' tools, proposals and catalogue, as the original indexes them.
func (c *Tools) index() []commands.IndexEntry {
	var ext []commands.IndexEntry
	if x := c.opts.Extensions; x != nil {
		l := listing(x)
		for _, e := range l.Admitted {
			if !e.OK {
				continue
			}
			for _, t := range e.Tools {
				ext = append(ext, commands.IndexEntry{ID: "extension:" + t.Name, Name: t.Name, Kind: commands.KindExtension,
					Category: t.Primitive, Status: "admitted", Description: firstText(t.Description, e.Description, e.Name),
					Invocation: commands.Invocation{Tool: commands.CallExtension, Args: map[string]string{"name": t.Name}}})
			}
		}
		for _, e := range l.Pending {
			status := "proposed"
			if !e.OK {
				status = "refused"
			}
			ext = append(ext, commands.IndexEntry{ID: "extension:proposal:" + e.ID, Name: firstText(e.Name, e.ID), Kind: commands.KindExtension,
				Category: "extension", Status: status, Description: firstText(e.Description, "Proposed extension "+e.ID+" ("+status+")"),
				Invocation: commands.Invocation{Tool: commands.ListExtensions}})
		}
		for _, e := range l.Catalogue {
			if !e.OK {
				continue
			}
			ext = append(ext, commands.IndexEntry{ID: "extension:catalogue:" + e.ID, Name: e.ID, Kind: commands.KindExtension,
				Category: "catalogue", Status: "catalogue", Description: firstText(e.Description, e.Name, "Catalogue extension "+e.ID),
				Invocation: commands.Invocation{Tool: commands.ProposeExtension}})
		}
	}
	return c.set.Load().Index(ext)
}

func firstText(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
