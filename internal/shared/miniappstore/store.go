// Package miniappstore decides what counts as a mini-app: which .html files the tray lists as
// apps and which are only pages, what a name means when someone asks to open, delete or save
// one, and which files each of those operations may touch.
//
// # Sources
//
// A Store reads three kinds of Root: the workspace (files at the top and one folder down),
// the shelf (host-owned storage no tool reaches, written only by Save) and any number of named,
// read-only sandbox roots (files up to two folders down). The shelf holds, for each app,
// <slug>.html and the record <slug>.meta.json.
//
// # Kinds
//
// Everything on the shelf is an app. Everything in a sandbox is a page. A workspace file is a
// page unless a shelf record names it: the record's workspacePath must equal the file's own
// path. Nothing else is proof, not the slug, the title or identical bytes, so a legacy record
// without workspacePath never turns a workspace file into an app; the shelf copy is then an app
// of its own and the workspace file stays a page. A proven app is listed once, as the
// workspace file (source workspace) carrying the record's id and title; its shelf copy is not
// listed apart. Saving a sandbox page copies it to the shelf as an app and leaves the sandbox
// file a page.
//
// # Names
//
// Apps have ids app_<slug> and pages page_<slug>; when two entries of one kind would share an
// id, the later one gets a numeric suffix, so ids are unique. Resolve tries, in order, the id,
// the file name (or storage path), the slug and the title; the first step that matches
// anything decides, and within it an app wins over a page. Delete is stricter about one
// thing: a name shaped like an id means that id and nothing else.
//
// # Ownership
//
// Delete removes the entry's own file and, for an app, the shelf copy and record only when
// that record carries the app's id. A page never removes a shelf file; a shelf app never
// removes a workspace file (only a proven workspace app does, the file being its own).
// Sandboxes are never written. Save refuses a shelf name held by a different app before
// writing.
//
// # Wasm
//
// Nothing differs: the package is portable Go over fsroot.Root, and its conformance suite
// (miniappstoretest) runs against OPFS roots in Chromium.
package miniappstore

import (
	"context"
	"encoding/hex"
	"errors"
	"io/fs"
	"math/rand/v2"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/names"
	"github.com/voicebox-go/voicebox/internal/shared/rawjson"
	"github.com/voicebox-go/voicebox/internal/shared/strictjson"
	"github.com/voicebox-go/voicebox/internal/shared/textf"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Kind says whether an entry is an app (listed in the tray) or a page (found by name only).
type Kind string

// The kinds.
const (
	KindApp  Kind = "app"
	KindPage Kind = "page"
)

// The sources an entry can come from.
const (
	SourceWorkspace = "workspace"
	SourceShelf     = "shelf"
	SourceSandbox   = "sandbox"
)

// Bounds of discovery and of what the store reads.
const (
	// WorkspaceDepth is how many folders below the top of the workspace discovery looks.
	WorkspaceDepth = 1
	// SandboxDepth is how many folders below the top of a sandbox root discovery looks.
	SandboxDepth = 2
	// MaxTitleScanBytes is how much of a file discovery reads looking for its <title>.
	MaxTitleScanBytes = 64 << 10
	// MaxRecordBytes is the largest shelf record the store reads; a larger one is unreadable.
	MaxRecordBytes = 64 << 10
	// MaxSlugBytes is the longest slug, so <slug>.meta.json stays a valid file name.
	MaxSlugBytes = 128
	// MaxTitleBytes is the longest title an entry carries; a longer one is cut.
	MaxTitleBytes = 256
	// MaxHTMLBytes is the largest mini-app ReadHTML returns; a larger file is refused
	// mini-app-too-large, so a launch never loads an unbounded document.
	MaxHTMLBytes = 4 << 20
)

const (
	htmlExt   = ".html"
	recordExt = ".meta.json"
	appPrefix = "app_"
	pagPrefix = "page_"
)

// Sandbox is a named, read-only root whose .html files are listed as pages.
type Sandbox struct {
	Name string
	Root fsroot.Root
}

// Config names the roots a Store reads. The zero Workspace means no folder is open.
type Config struct {
	// Workspace is the folder the user works in; nil when none is open.
	Workspace fsroot.Root
	// Shelf is host-owned storage for saved apps. It must not be reachable by any tool: the
	// store trusts every record it finds there as written by Save.
	Shelf fsroot.Root
	// Sandboxes are read-only roots; the store never writes or removes anything in them.
	Sandboxes []Sandbox
	// Now is the clock for record times; nil means time.Now.
	Now func() time.Time
}

// Entry describes one discovered mini-app or page.
type Entry struct {
	AppID    string `json:"appId"`
	Slug     string `json:"slug"`
	Title    string `json:"title"`
	FileName string `json:"fileName"`
	// Source is SourceWorkspace, SourceShelf or SourceSandbox.
	Source string `json:"source"`
	// Sandbox is the sandbox's name when Source is SourceSandbox.
	Sandbox string `json:"sandbox,omitempty"`
	Kind    Kind   `json:"kind"`
	// StoragePath is the file's path inside its source root.
	StoragePath string `json:"storagePath"`
	// Folder, for a folder app, is the folder of its files in its source root: the index.html's
	// folder in the workspace, or the folder its shelf record names. Empty for a one-file app.
	Folder    string    `json:"folder,omitempty"`
	Size      int64     `json:"size"`
	CreatedAt time.Time `json:"createdAt,omitzero"`
	UpdatedAt time.Time `json:"updatedAt,omitzero"`

	// stem is the shelf name (<stem>.html, <stem>.meta.json) of an app's copy; "" for a page.
	stem string
}

// Record is the shelf's <slug>.meta.json.
type Record struct {
	AppID string `json:"appId"`
	Slug  string `json:"slug"`
	Title string `json:"title"`
	// WorkspacePath is the workspace file the app was saved from; it is the only proof that
	// the file is this app. Empty for an app saved from HTML alone or from a sandbox.
	WorkspacePath string `json:"workspacePath,omitempty"`
	// Folder names the shelf folder holding a folder app's files besides its index.html, saved
	// with the app and deleted with it; empty for a one-file app.
	Folder    string    `json:"folder,omitempty"`
	CreatedAt time.Time `json:"createdAt,omitzero"`
	UpdatedAt time.Time `json:"updatedAt,omitzero"`
}

// A record is a file on the shelf, read back by older and newer builds: it is written byte for
// byte as json.MarshalIndent wrote it and read as json.Unmarshal read it (members it does not
// know skipped), without reflection (TestRecordAgreesWithJSON, FuzzRecord).

// StrictFields lists the record's members for strictjson.
func (r *Record) StrictFields() []strictjson.Field {
	return []strictjson.Field{{Name: "appId", Into: &r.AppID}, {Name: "slug", Into: &r.Slug}, {Name: "title", Into: &r.Title},
		{Name: "workspacePath", Into: &r.WorkspacePath}, {Name: "folder", Into: &r.Folder}, {Name: "createdAt", Into: &r.CreatedAt},
		{Name: "updatedAt", Into: &r.UpdatedAt}}
}

var errRecordTime = errors.New("miniappstore: a record's time is outside the years 0 to 9999")

// marshalIndent writes the record as json.MarshalIndent(r, "", "  ") does.
func (r *Record) marshalIndent() ([]byte, error) {
	w := rawjson.NewObject(nil, true)
	w.String("appId", r.AppID)
	w.String("slug", r.Slug)
	w.String("title", r.Title)
	if r.WorkspacePath != "" {
		w.String("workspacePath", r.WorkspacePath)
	}
	if r.Folder != "" {
		w.String("folder", r.Folder)
	}
	if (!r.CreatedAt.IsZero() && !w.Time("createdAt", r.CreatedAt)) || (!r.UpdatedAt.IsZero() && !w.Time("updatedAt", r.UpdatedAt)) {
		return nil, errRecordTime
	}
	return rawjson.AppendIndent(nil, w.Close(), "", "  "), nil
}

// Store discovers, resolves, deletes and saves mini-apps over its roots. It is safe for
// concurrent use; its own deletes and saves run one at a time.
type Store struct {
	cfg Config
	mu  sync.Mutex
}

// New returns a Store over cfg. The shelf is required; sandbox names must be non-empty and
// distinct.
func New(cfg Config) (*Store, error) {
	if cfg.Shelf == nil {
		return nil, errors.New("miniappstore: no shelf root")
	}
	seen := map[string]bool{}
	for _, sb := range cfg.Sandboxes {
		if sb.Name == "" || sb.Root == nil {
			return nil, errors.New("miniappstore: a sandbox needs a name and a root")
		}
		if seen[sb.Name] {
			return nil, textf.Errorf("miniappstore: sandbox %q named twice", sb.Name)
		}
		seen[sb.Name] = true
	}
	cfg.Sandboxes = append([]Sandbox(nil), cfg.Sandboxes...)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Store{cfg: cfg}, nil
}

// shelfItem is one <stem>.html on the shelf with its record, when it has a readable one.
type shelfItem struct {
	stem   string
	file   fsroot.Entry
	title  string // from <title>
	rec    *Record
	proves string // the workspace path the record proves, once a workspace file matched it
}

// Discover lists every entry: apps first in shelf order, then workspace pages, then sandbox
// pages in the order the sandboxes were configured.
func (s *Store) Discover(ctx context.Context) ([]Entry, error) {
	shelf, err := s.readShelf(ctx)
	if err != nil {
		return nil, err
	}
	byPath := map[string]*shelfItem{}
	for i := range shelf {
		if r := shelf[i].rec; r != nil && r.WorkspacePath != "" && byPath[r.WorkspacePath] == nil {
			byPath[r.WorkspacePath] = &shelf[i]
		}
	}
	type found struct {
		path  string
		file  fsroot.Entry
		title string
	}
	var wsFiles []found
	if s.cfg.Workspace != nil {
		err := walk(ctx, s.cfg.Workspace, "", WorkspaceDepth, func(p string, e fsroot.Entry) {
			wsFiles = append(wsFiles, found{p, e, readTitle(ctx, s.cfg.Workspace, p)})
		})
		if err != nil {
			return nil, textf.Errorf("miniappstore: list workspace: %w", err)
		}
	}
	var pages []Entry
	for _, f := range wsFiles {
		if it := byPath[f.path]; it != nil && it.proves == "" {
			it.proves = f.path
			it.file = f.file
			continue
		}
		pages = append(pages, pageEntry(SourceWorkspace, "", f.path, f.file, f.title))
	}
	for _, sb := range s.cfg.Sandboxes {
		err := walk(ctx, sb.Root, "", SandboxDepth, func(p string, e fsroot.Entry) {
			pages = append(pages, pageEntry(SourceSandbox, sb.Name, p, e, readTitle(ctx, sb.Root, p)))
		})
		if err != nil {
			return nil, textf.Errorf("miniappstore: list sandbox %q: %w", sb.Name, err)
		}
	}

	ids := map[string]bool{}
	out := make([]Entry, 0, len(shelf)+len(pages))
	for _, it := range shelf {
		e := Entry{
			Slug:        Slug(it.stem),
			FileName:    it.stem + htmlExt,
			Source:      SourceShelf,
			Kind:        KindApp,
			StoragePath: it.stem + htmlExt,
			Size:        it.file.Size,
			CreatedAt:   it.file.ModTime,
			UpdatedAt:   it.file.ModTime,
			stem:        it.stem,
		}
		e.Title = firstNonEmpty(it.title, titleFromFileName(e.FileName))
		want := appPrefix + e.Slug
		if r := it.rec; r != nil {
			want = recordID(r, it.stem)
			e.Title = firstNonEmpty(clip(r.Title), e.Title)
			if !r.CreatedAt.IsZero() {
				e.CreatedAt = r.CreatedAt
			}
			if !r.UpdatedAt.IsZero() {
				e.UpdatedAt = r.UpdatedAt
			}
			if shelfFolder(r.Folder) {
				e.Folder = r.Folder
			}
		}
		if it.proves != "" {
			e.Source = SourceWorkspace
			e.StoragePath = it.proves
			e.FileName = path.Base(it.proves)
			e.Size = it.file.Size
			e.Folder, _ = FolderOf(it.proves)
		}
		e.AppID = unique(ids, want)
		out = append(out, e)
	}
	for _, e := range pages {
		e.AppID = unique(ids, pagPrefix+e.Slug)
		out = append(out, e)
	}
	return out, nil
}

// shelfFolder reports whether name may be a record's folder: one element at the top of the shelf.
func shelfFolder(name string) bool {
	return name != "" && fsroot.ValidName(name)
}

func pageEntry(source, sandbox, p string, f fsroot.Entry, title string) Entry {
	name := path.Base(p)
	return Entry{
		Slug:        Slug(name),
		Title:       firstNonEmpty(title, titleFromFileName(name)),
		FileName:    name,
		Source:      source,
		Sandbox:     sandbox,
		Kind:        KindPage,
		StoragePath: p,
		Folder:      workspaceFolder(source, p),
		Size:        f.Size,
		CreatedAt:   f.ModTime,
		UpdatedAt:   f.ModTime,
	}
}

// workspaceFolder is the folder of a workspace folder app at p; "" for anything else.
func workspaceFolder(source, p string) string {
	if source != SourceWorkspace {
		return ""
	}
	dir, _ := FolderOf(p)
	return dir
}

// unique returns id, or id with the first free numeric suffix, and marks it taken.
func unique(taken map[string]bool, id string) string {
	got := id
	for n := 2; taken[got]; n++ {
		got = id + "_" + strconv.Itoa(n)
	}
	taken[got] = true
	return got
}

func (s *Store) readShelf(ctx context.Context) ([]shelfItem, error) {
	list, err := s.cfg.Shelf.ReadDir(ctx, "")
	if err != nil {
		return nil, textf.Errorf("miniappstore: list shelf: %w", err)
	}
	var items []shelfItem
	for _, e := range list {
		if e.Dir || !isHTML(e.Name) {
			continue
		}
		it := shelfItem{stem: e.Name[:len(e.Name)-len(htmlExt)], file: e}
		if it.stem == "" {
			continue
		}
		it.title = readTitle(ctx, s.cfg.Shelf, e.Name)
		rec, err := readRecord(ctx, s.cfg.Shelf, it.stem+recordExt)
		if err == nil {
			it.rec = rec
		}
		items = append(items, it)
	}
	return items, nil
}

// readRecord reads and parses the shelf record name. A missing record is fs.ErrNotExist; one
// that is too large or not a record is an error too, and callers treat it as unknown.
func readRecord(ctx context.Context, shelf fsroot.Root, name string) (*Record, error) {
	if fsroot.Check(name) != nil {
		return nil, fs.ErrInvalid
	}
	data, size, err := fsroot.ReadPrefix(ctx, shelf, name, MaxRecordBytes)
	if err != nil {
		return nil, err
	}
	if size > MaxRecordBytes {
		return nil, errors.New("miniappstore: record too large")
	}
	var r Record
	if err := strictjson.DecodeStructLoose(data, &r); err != nil {
		return nil, textf.Errorf("miniappstore: record %s: %w", name, err)
	}
	return &r, nil
}

// walk calls fn for every .html file at most depth folders below dir, in listing order.
func walk(ctx context.Context, r fsroot.Root, dir string, depth int, fn func(string, fsroot.Entry)) error {
	list, err := r.ReadDir(ctx, dir)
	if err != nil {
		return err
	}
	for _, e := range list {
		p := path.Join(dir, e.Name)
		switch {
		case e.Dir && depth > 0:
			if err := walk(ctx, r, p, depth-1, fn); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		case !e.Dir && isHTML(e.Name):
			fn(p, e)
		}
	}
	return nil
}

func isHTML(name string) bool {
	return len(name) > len(htmlExt) && strings.EqualFold(name[len(name)-len(htmlExt):], htmlExt)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Resolve finds the entry name means. The steps are the id, then the file name or storage
// path, then the slug, then the title (ignoring case); the first step that matches any entry
// decides, and within it an app wins over a page. No match is mini-app-not-found.
func (s *Store) Resolve(ctx context.Context, name string) (Entry, error) {
	entries, err := s.Discover(ctx)
	if err != nil {
		return Entry{}, err
	}
	if e, ok := resolve(entries, name); ok {
		return e, nil
	}
	return Entry{}, notFound(name)
}

// recordID is the id of the app the shelf record at stem describes: its appId when that is an
// app id, else app_<slug of stem>.
func recordID(r *Record, stem string) string {
	if strings.HasPrefix(r.AppID, appPrefix) && isIDShaped(r.AppID) {
		return r.AppID
	}
	return appPrefix + Slug(stem)
}

// isIDShaped reports whether name looks like an entry id: app_ or page_ and then lower-case
// ASCII letters, digits, hyphens and underscores (a slug, or the older underscore form a saved
// record may carry, or a slug with a _2 suffix).
func isIDShaped(name string) bool {
	name = strings.TrimSpace(name)
	for _, p := range []string{appPrefix, pagPrefix} {
		if rest, ok := strings.CutPrefix(name, p); ok && rest != "" && len(rest) <= MaxSlugBytes+8 &&
			strings.Trim(rest, "abcdefghijklmnopqrstuvwxyz0123456789-_") == "" {
			return true
		}
	}
	return false
}

func notFound(name string) error {
	return refusal.New(refusal.MiniAppNotFound, "no mini-app or page is called %q; list them to see the names", name)
}

func resolve(entries []Entry, name string) (Entry, bool) {
	name = strings.TrimSpace(name)
	if name == "" {
		return Entry{}, false
	}
	slug := Slug(name)
	steps := []func(Entry) bool{
		func(e Entry) bool { return e.AppID == name },
		func(e Entry) bool { return e.FileName == name || e.StoragePath == name },
		func(e Entry) bool { return slug != "" && e.Slug == slug },
		func(e Entry) bool { return strings.EqualFold(e.Title, name) },
	}
	for _, match := range steps {
		var page *Entry
		for i := range entries {
			if !match(entries[i]) {
				continue
			}
			if entries[i].Kind == KindApp {
				return entries[i], true
			}
			if page == nil {
				page = &entries[i]
			}
		}
		if page != nil {
			return *page, true
		}
	}
	return Entry{}, false
}

// Delete removes what the entry name resolves to owns, and returns that entry: its own file,
// and for an app the shelf copy and record when the record there carries the app's id. A
// sandbox page is read-only (mini-app-read-only); an unknown name is mini-app-not-found.
//
// Delete resolves like Resolve with one exception: a name shaped like an id (app_ or page_
// followed by a slug) means that id only. Resolve lets app_timer find the page timer.html
// once the app is gone, which is right for opening it and wrong for deleting it.
func (s *Store) Delete(ctx context.Context, name string) (Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	entries, err := s.Discover(ctx)
	if err != nil {
		return Entry{}, err
	}
	e, ok := resolve(entries, name)
	if !ok || isIDShaped(name) && e.AppID != strings.TrimSpace(name) {
		return Entry{}, notFound(name)
	}
	var own fsroot.Root
	switch e.Source {
	case SourceWorkspace:
		own = s.cfg.Workspace
	case SourceShelf:
		own = s.cfg.Shelf
	default:
		return Entry{}, refusal.New(refusal.MiniAppReadOnly, "%q is in the read-only sandbox %q; it cannot be deleted here", e.FileName, e.Sandbox)
	}
	if err := own.Remove(ctx, e.StoragePath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Entry{}, textf.Errorf("miniappstore: delete %s: %w", e.AppID, err)
	}
	if e.Kind != KindApp || e.stem == "" {
		return e, nil
	}
	rec, err := readRecord(ctx, s.cfg.Shelf, e.stem+recordExt)
	if err != nil || recordID(rec, e.stem) != e.AppID {
		// Not this app's record (or none): the shelf files are not the entry's to remove.
		return e, nil
	}
	for _, name := range []string{e.stem + htmlExt, e.stem + recordExt} {
		if e.Source == SourceShelf && name == e.StoragePath {
			continue
		}
		if err := s.cfg.Shelf.Remove(ctx, name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return Entry{}, textf.Errorf("miniappstore: delete %s: %w", e.AppID, err)
		}
	}
	if shelfFolder(rec.Folder) {
		// A folder app goes as one unit: its files with its copy and record.
		if err := removeAll(ctx, s.cfg.Shelf, rec.Folder); err != nil {
			return Entry{}, textf.Errorf("miniappstore: delete %s: %w", e.AppID, err)
		}
	}
	return e, nil
}

// copyFolder copies the files of the folder app in dir of from (but its index.html, which the
// shelf keeps as <slug>.html) to a new shelf folder, and returns that folder's name. On failure
// it removes what it wrote.
func (s *Store) copyFolder(ctx context.Context, slug string, from fsroot.Root, dir string) (string, error) {
	files, err := FolderFiles(ctx, from, dir)
	if err != nil {
		return "", err
	}
	// The suffix only keeps this copy apart from an earlier one of the same slug: math/rand/v2
	// serves, and keeps crypto/rand (the FIPS DRBG, AES, math/big) out of the page's wasm.
	var b [4]byte
	r := rand.Uint32()
	for i := range b {
		b[i] = byte(r >> (8 * i))
	}
	folder := slug + "-files-" + hex.EncodeToString(b[:])
	shelf := s.cfg.Shelf
	if err := shelf.MkdirAll(ctx, folder); err != nil {
		return "", textf.Errorf("miniappstore: save %s: %w", slug, err)
	}
	for _, f := range files {
		if f.Path == FolderIndex {
			continue
		}
		data, err := ReadFolderFile(ctx, from, dir, f.Path)
		if err == nil {
			if d := path.Dir(f.Path); d != "." {
				err = shelf.MkdirAll(ctx, path.Join(folder, d))
			}
		}
		if err == nil {
			err = shelf.WriteFile(ctx, path.Join(folder, f.Path), data)
		}
		if err != nil {
			removeAll(ctx, shelf, folder)
			return "", textf.Errorf("miniappstore: save %s: %s: %w", slug, f.Path, err)
		}
	}
	return folder, nil
}

// removeAll removes the folder name of r and everything in it.
func removeAll(ctx context.Context, r fsroot.Root, name string) error {
	list, err := r.ReadDir(ctx, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range list {
		p := path.Join(name, e.Name)
		if e.Dir {
			err = removeAll(ctx, r, p)
		} else {
			err = r.Remove(ctx, p)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := r.Remove(ctx, name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// ReadHTML returns the content of e's file, read from e's own source root. A file over
// MaxHTMLBytes is refused mini-app-too-large; an entry whose source is unknown or no longer
// configured is mini-app-not-found.
func (s *Store) ReadHTML(ctx context.Context, e Entry) ([]byte, error) {
	var root fsroot.Root
	switch e.Source {
	case SourceShelf:
		root = s.cfg.Shelf
	case SourceWorkspace:
		root = s.cfg.Workspace
	case SourceSandbox:
		for _, sb := range s.cfg.Sandboxes {
			if sb.Name == e.Sandbox {
				root = sb.Root
			}
		}
	}
	if root == nil {
		return nil, notFound(e.AppID)
	}
	data, size, err := fsroot.ReadPrefix(ctx, root, e.StoragePath, MaxHTMLBytes)
	if err != nil {
		return nil, err
	}
	if size > MaxHTMLBytes {
		return nil, refusal.New(refusal.MiniAppTooLarge, "%s is %d bytes; a mini-app may be at most %d", e.StoragePath, size, MaxHTMLBytes)
	}
	return data, nil
}

// SaveOptions is what Save writes to the shelf.
type SaveOptions struct {
	// Title names the app; its slug is the shelf name. Empty means the HTML's <title>, else
	// the file name of WorkspacePath.
	Title string
	// HTML is the app's content. Blank content is refused with missing-html.
	HTML []byte
	// WorkspacePath is the workspace file the app comes from, when it does. It is written into
	// the record and proves that file is this app.
	WorkspacePath string
	// FolderFrom and FolderDir, for a folder app, are where its files are (FolderFiles): they
	// are copied to a shelf folder of their own, which the record names.
	FolderFrom fsroot.Root
	FolderDir  string
}

// Save writes the shelf copy <slug>.html and the record <slug>.meta.json, and returns the
// app as the next discovery sees it. Saving again with the same slug and the same
// WorkspacePath updates the app in place. A shelf name already held by a different app (a
// record or copy with another WorkspacePath, or one the store cannot read) is refused with
// mini-app-name-taken before anything is written.
//
// Each file is replaced atomically, the record first; when the copy then fails to write, the
// previous record is put back. A record without its copy proves nothing, so even a save cut
// off between the two writes adds no entry and leaves the previous copy.
//
// A folder app is saved as one unit: its files go to a new shelf folder first, the record then
// names that folder, and only once the copy is written is the previous folder removed; a save
// that fails on the way removes what it wrote and leaves the previous app whole.
func (s *Store) Save(ctx context.Context, opts SaveOptions) (Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.save(ctx, opts, "")
}

// save is Save; slug, when not empty, is the shelf name to use instead of the title's.
func (s *Store) save(ctx context.Context, opts SaveOptions, slug string) (Entry, error) {
	if len(strings.TrimSpace(string(opts.HTML))) == 0 {
		return Entry{}, refusal.New(refusal.MissingHTML, "the mini-app has no HTML to save")
	}
	if opts.WorkspacePath != "" {
		if err := fsroot.Check(opts.WorkspacePath); err != nil {
			return Entry{}, err
		}
	}
	title := clip(strings.TrimSpace(opts.Title))
	if r := names.Check("the title", title); r != nil {
		return Entry{}, r
	}
	if title == "" {
		title = findTitle(opts.HTML)
	}
	if title == "" && opts.WorkspacePath != "" {
		title = titleFromFileName(path.Base(opts.WorkspacePath))
	}
	if slug == "" {
		slug = Slug(title)
	}
	if slug == "" {
		return Entry{}, refusal.New(refusal.InvalidMiniAppName, "the title %q has no letters or digits to name the app by; give it another title", title)
	}
	htmlName, recName := slug+htmlExt, slug+recordExt
	shelf := s.cfg.Shelf

	var prev *Record
	var prevRaw []byte
	rec, err := readRecord(ctx, shelf, recName)
	switch {
	case err == nil:
		prev = rec
		if prevRaw, err = shelf.ReadFile(ctx, recName); err != nil {
			return Entry{}, textf.Errorf("miniappstore: save %s: %w", slug, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return Entry{}, s.taken(ctx, slug, nil)
	}
	_, statErr := shelf.Stat(ctx, htmlName)
	copyExists := statErr == nil
	if statErr != nil && !errors.Is(statErr, fs.ErrNotExist) {
		return Entry{}, textf.Errorf("miniappstore: save %s: %w", slug, statErr)
	}
	if (prev != nil || copyExists) && (prev == nil || prev.WorkspacePath != opts.WorkspacePath) {
		return Entry{}, s.taken(ctx, slug, prev)
	}

	now := s.cfg.Now().UTC()
	next := Record{AppID: appPrefix + slug, Slug: slug, Title: title, WorkspacePath: opts.WorkspacePath, CreatedAt: now, UpdatedAt: now}
	if opts.FolderFrom != nil {
		folder, err := s.copyFolder(ctx, slug, opts.FolderFrom, opts.FolderDir)
		if err != nil {
			return Entry{}, err
		}
		next.Folder = folder
	}
	// undoFolder removes the folder this save wrote, when the save does not finish.
	undoFolder := func() {
		if next.Folder != "" {
			removeAll(ctx, shelf, next.Folder)
		}
	}
	if prev != nil {
		next.AppID = recordID(prev, slug)
		if !prev.CreatedAt.IsZero() {
			next.CreatedAt = prev.CreatedAt
		}
	}
	data, err := next.marshalIndent()
	if err != nil {
		undoFolder()
		return Entry{}, err
	}
	if err := shelf.WriteFile(ctx, recName, append(data, '\n')); err != nil {
		undoFolder()
		return Entry{}, textf.Errorf("miniappstore: save %s: %w", slug, err)
	}
	if err := shelf.WriteFile(ctx, htmlName, opts.HTML); err != nil {
		// Put the record back as it was, so a failed save leaves the previous state whole.
		if prevRaw != nil {
			shelf.WriteFile(ctx, recName, prevRaw)
		} else {
			shelf.Remove(ctx, recName)
		}
		undoFolder()
		return Entry{}, textf.Errorf("miniappstore: save %s: %w", slug, err)
	}
	if prev != nil && shelfFolder(prev.Folder) && prev.Folder != next.Folder {
		removeAll(ctx, shelf, prev.Folder)
	}
	entries, err := s.Discover(ctx)
	if err != nil {
		return Entry{}, err
	}
	for _, e := range entries {
		if e.Kind == KindApp && e.stem == slug {
			return e, nil
		}
	}
	return Entry{}, textf.Errorf("miniappstore: saved %s but discovery does not list it", slug)
}

// taken is the refusal for a shelf name held by another app, naming that app.
func (s *Store) taken(ctx context.Context, slug string, rec *Record) error {
	id, title := appPrefix+slug, slug
	if rec != nil {
		id = firstNonEmpty(rec.AppID, id)
		title = firstNonEmpty(rec.Title, title)
	} else if t := readTitle(ctx, s.cfg.Shelf, slug+htmlExt); t != "" {
		title = t
	}
	return refusal.New(refusal.MiniAppNameTaken, "the name %q belongs to the app %q (%s); save under another title or delete that app first", slug, title, id)
}

// SavePage saves the file name means as an app under title (empty: its own title). The
// target is the file the caller named: a workspace file at that path wins; otherwise the
// name is resolved among workspace and sandbox entries only. A workspace file's record names
// it, which makes it the app on the next discovery.
func (s *Store) SavePage(ctx context.Context, name, title string) (Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var root fsroot.Root
	var p string
	ws := s.cfg.Workspace
	if ws != nil && fsroot.Check(name) == nil && isHTML(name) {
		if st, err := ws.Stat(ctx, name); err == nil && !st.Dir {
			root, p = ws, name
		}
	}
	if root == nil {
		entries, err := s.Discover(ctx)
		if err != nil {
			return Entry{}, err
		}
		var local []Entry
		for _, e := range entries {
			if e.Source != SourceShelf {
				local = append(local, e)
			}
		}
		e, ok := resolve(local, name)
		if !ok {
			return Entry{}, notFound(name)
		}
		p = e.StoragePath
		if e.Source == SourceWorkspace {
			root = ws
		} else {
			for _, sb := range s.cfg.Sandboxes {
				if sb.Name == e.Sandbox {
					root = sb.Root
				}
			}
		}
	}
	html, err := root.ReadFile(ctx, p)
	if err != nil {
		return Entry{}, textf.Errorf("miniappstore: read %s: %w", p, err)
	}
	opts := SaveOptions{Title: title, HTML: html}
	if root == ws {
		opts.WorkspacePath = p
		if dir, ok := FolderOf(p); ok {
			opts.FolderFrom, opts.FolderDir = ws, dir
		}
	}
	slug := ""
	if strings.TrimSpace(title) == "" {
		// Promoting a page keeps its slug: page_<slug> becomes app_<slug>.
		slug = Slug(path.Base(p))
	}
	if root == ws {
		// A file that is already an app keeps its shelf name whatever the title, so it never
		// ends up with two records.
		entries, err := s.Discover(ctx)
		if err != nil {
			return Entry{}, err
		}
		for _, e := range entries {
			if e.Kind == KindApp && e.Source == SourceWorkspace && e.StoragePath == p {
				slug = e.stem
			}
		}
	}
	return s.save(ctx, opts, slug)
}
