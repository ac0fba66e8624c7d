package server

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/miniappstore"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Folder mini-apps' files. A mini-app may be a folder (miniappstore.FolderOf); its files live in
// the page's storage (OPFS, or a folder the person granted), which only the page can read. So
// the page copies them here when it starts the app, into a bundle with a random token, and the
// relay serves them back at AppFilesPath<token>/<path> to the app's sandboxed frame, whose
// bridge puts its base URL there: the app's relative URLs resolve inside its folder and nowhere
// else (a "../" climbs out of the bundle, where nothing is served).
//
//	POST   /api/app-files                 {ok, token, base}     a new, empty bundle
//	PUT    /api/app-files/{token}/{path}  the file's bytes      {ok, path, size}
//	DELETE /api/app-files/{token}                               {ok}: the app closed
//	GET    /app-files/{token}/{path}      the file, from the page's host or the app's own
//
// The page's routes pass the origin check and the gate like the page's others. The files
// themselves are served without a session (the sandboxed frame is an opaque origin: it sends no
// cookie), to anyone who has the token, with Access-Control-Allow-Origin: null so the frame can
// load them as module scripts: that header is on these bytes only, never on /api/*. A path is
// held to fsroot.Check (no "..", no dot names), an uploaded one to fsroot.CheckCreate (no
// character that hides or reorders text: invalid-name), bundles to the folder app's bounds, and all of
// them together to MaxAppFileBundles and MaxAppFilesBytes for AppFilesLifetime. At either bound
// a new bundle or file is refused app-files-full: a bundle is dropped only when its app closes
// (DELETE) or its lifetime ends, never to make room, since an open app still loads from it.
//
// The PUT is the one route of the page's that takes no JSON (BytesBody): a file's bytes, declared
// application/octet-stream. Like every state-changing request it passes the cross-site wall
// (stateChangeRefused): the page's own Origin or none, and a type no page of another site can
// send without a preflight. An empty body is an empty file.
const (
	// AppFilesPath is where folder apps' files are served from.
	AppFilesPath = "/app-files/"
	// MaxAppFilesBytes bounds the bundles held at once, together; a new file past it is refused
	// app-files-full.
	MaxAppFilesBytes = 64 << 20
	// MaxAppFileBundles bounds how many bundles are held at once; a new one past it is refused
	// app-files-full (a folder app open in each of 32 tabs is far past what a person runs).
	MaxAppFileBundles = 32
	// AppFilesLifetime is how long a bundle is kept after it was made.
	AppFilesLifetime = time.Hour
	// appFileTokenBytes is the randomness of a bundle's token.
	appFileTokenBytes = 16
)

// appFiles holds the bundles. It is safe for concurrent use.
type appFiles struct {
	mu      sync.Mutex
	bundles map[string]*appBundle
	order   []string // tokens, oldest first
	total   int64
	now     func() time.Time
}

type appBundle struct {
	created time.Time
	files   map[string][]byte
	bytes   int64
}

func newAppFiles() *appFiles {
	return &appFiles{bundles: map[string]*appBundle{}, now: time.Now}
}

// create makes an empty bundle and returns its token, or refuses app-files-full when
// MaxAppFileBundles are held.
func (a *appFiles) create() (string, *refusal.Refusal) {
	b := make([]byte, appFileTokenBytes)
	_, _ = rand.Read(b)
	token := hex.EncodeToString(b)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.expireLocked()
	if len(a.order) >= MaxAppFileBundles {
		return "", refusal.New(refusal.AppFilesFull,
			"the relay holds %d folder apps' files already, its bound; close a folder app (or wait until one's hour is over) and open this one again", MaxAppFileBundles)
	}
	a.bundles[token] = &appBundle{created: a.now(), files: map[string][]byte{}}
	a.order = append(a.order, token)
	return token, nil
}

// put stores one file of a bundle, within the folder app's bounds.
func (a *appFiles) put(token, name string, data []byte) *refusal.Refusal {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.expireLocked()
	b, ok := a.bundles[token]
	if !ok {
		return refusal.New(refusal.NotFound, "no folder app's files are held under that token (it closed, or an hour passed)")
	}
	old, had := b.files[name]
	if !had && len(b.files) >= miniappstore.MaxFolderFiles {
		return refusal.New(refusal.MiniAppTooLarge, "a folder app may have at most %d files", miniappstore.MaxFolderFiles)
	}
	grow := int64(len(data)) - int64(len(old))
	if b.bytes+grow > miniappstore.MaxFolderBytes {
		return refusal.New(refusal.MiniAppTooLarge, "a folder app's files may take at most %d bytes together", miniappstore.MaxFolderBytes)
	}
	if a.total+grow > MaxAppFilesBytes {
		return refusal.New(refusal.AppFilesFull,
			"the relay holds at most %d bytes of folder apps' files together, and the open ones fill it; close a folder app and open this one again", MaxAppFilesBytes)
	}
	b.files[name] = data
	b.bytes += grow
	a.total += grow
	return nil
}

// get returns one file of a bundle.
func (a *appFiles) get(token, name string) ([]byte, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.expireLocked()
	b, ok := a.bundles[token]
	if !ok {
		return nil, false
	}
	data, ok := b.files[name]
	return data, ok
}

// drop forgets a bundle, and reports whether there was one under token.
func (a *appFiles) drop(token string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.bundles[token]
	a.dropLocked(token)
	return ok
}

func (a *appFiles) dropLocked(token string) {
	b, ok := a.bundles[token]
	if !ok {
		return
	}
	a.total -= b.bytes
	delete(a.bundles, token)
	for i, t := range a.order {
		if t == token {
			a.order = append(a.order[:i:i], a.order[i+1:]...)
			break
		}
	}
}

func (a *appFiles) expireLocked() {
	for len(a.order) > 0 && a.now().Sub(a.bundles[a.order[0]].created) > AppFilesLifetime {
		a.dropLocked(a.order[0])
	}
}

// validAppFileToken reports whether s is a token create could have made.
func validAppFileToken(s string) bool {
	if len(s) != 2*appFileTokenBytes {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// appFileName is the file of a bundle a request path after AppFilesPath names: token, then a
// name fsroot.Check accepts.
func appFileName(rest string) (token, name string, ok bool) {
	token, name, found := strings.Cut(rest, "/")
	if !found || !validAppFileToken(token) || fsroot.Check(name) != nil {
		return "", "", false
	}
	return token, name, true
}

func (s *Server) registerAppFileRoutes() {
	s.Handle("POST /api/app-files", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{}
		if !ReadJSON(w, r, 1<<10, &body) {
			return
		}
		token, rf := s.appFiles.create()
		if rf != nil {
			WriteRefusal(w, http.StatusInsufficientStorage, rf)
			return
		}
		WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "token": token, "base": AppFilesPath + token + "/"})
	}))
	s.HandleBody("PUT /api/app-files/{rest...}", BytesBody, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, name, ok := appFileName(r.PathValue("rest"))
		if !ok {
			rule := refusal.OutsideRoot
			if _, rest, _ := strings.Cut(r.PathValue("rest"), "/"); rest != "" {
				if rf, isRefusal := refusal.As(fsroot.Check(rest)); isRefusal {
					rule = rf.Rule
				}
			}
			WriteRefusal(w, http.StatusBadRequest, refusal.New(rule,
				"a folder app's file is named by its token, then a path inside its folder: relative, no \"..\", no name starting with a dot"))
			return
		}
		if rf, isRefusal := refusal.As(fsroot.CheckCreate(name)); isRefusal {
			WriteRefusal(w, http.StatusBadRequest, rf) // invalid-name: a lookalike (internal/shared/names)
			return
		}
		if r.ContentLength > miniappstore.MaxFolderFileBytes {
			writeTooLarge(w, miniappstore.MaxFolderFileBytes)
			return
		}
		data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, miniappstore.MaxFolderFileBytes))
		if err != nil {
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				writeTooLarge(w, miniappstore.MaxFolderFileBytes)
				return
			}
			WriteRefusal(w, http.StatusBadRequest, refusal.New(refusal.MalformedJSON, "the file's bytes could not be read whole"))
			return
		}
		if rf := s.appFiles.put(token, name, data); rf != nil {
			status := http.StatusRequestEntityTooLarge
			switch rf.Rule {
			case refusal.NotFound:
				status = http.StatusNotFound
			case refusal.AppFilesFull:
				status = http.StatusInsufficientStorage
			}
			WriteRefusal(w, status, rf)
			return
		}
		WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "path": name, "size": len(data)})
	}))
	s.Handle("DELETE /api/app-files/{token}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.appFiles.drop(r.PathValue("token")) {
			WriteRefusal(w, http.StatusNotFound, refusal.New(refusal.NotFound, "no folder app's files are held under that token (it closed, or an hour passed)"))
			return
		}
		WriteJSON(w, http.StatusOK, map[string]any{"ok": true})
	}))
}

// serveAppFile answers GET and HEAD of AppFilesPath, on the page's host and on app hosts alike.
func (s *Server) serveAppFile(w http.ResponseWriter, r *http.Request) {
	token, name, ok := appFileName(strings.TrimPrefix(r.URL.Path, AppFilesPath))
	var data []byte
	if ok {
		data, ok = s.appFiles.get(token, name)
	}
	if !ok || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		NotFound(w)
		return
	}
	h := w.Header()
	ctype := mime.TypeByExtension(path.Ext(name))
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(data)))
	h.Set("Cache-Control", "no-store")
	// The app's frame is an opaque origin: its module scripts are CORS requests from "null".
	h.Set("Access-Control-Allow-Origin", "null")
	// A document opened from here directly runs nothing and reaches nothing.
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Del("X-Frame-Options")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = io.Copy(w, bytes.NewReader(data))
}

// appFilesSource is the CSP source that lets a bridge's app load the files of the bundle named in
// the bridge's address (?files=<token>), from the host it was served on: the bundle's path only.
func appFilesSource(r *http.Request) string {
	token := r.URL.Query().Get("files")
	if !validAppFileToken(token) || !safeHost(r.Host) {
		return ""
	}
	scheme := "http"
	if HTTPS(r) {
		scheme = "https"
	}
	return scheme + "://" + r.Host + AppFilesPath + token + "/"
}

// appFileDirectives are the bridge policy's directives a folder app's own files are added to:
// its images, styles, fonts and media. Its scripts already load from the bridge's own host
// ('self'), and it still connects nowhere.
var appFileDirectives = []string{"img-src", "style-src", "font-src", "media-src"}

// widenBridgePolicy adds the bundle source src (appFilesSource) to the bridge's policy in h.
func widenBridgePolicy(h http.Header, src string) {
	if src == "" {
		return
	}
	parts := strings.Split(h.Get("Content-Security-Policy"), "; ")
	for i, p := range parts {
		name, _, _ := strings.Cut(p, " ")
		for _, d := range appFileDirectives {
			if name == d {
				parts[i] = p + " " + src
			}
		}
	}
	h.Set("Content-Security-Policy", strings.Join(parts, "; "))
}
