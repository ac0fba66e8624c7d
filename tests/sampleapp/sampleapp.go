// Package sampleapp is a sample external mini-app, "Order Book": a small web app on its own
// origin that Voicebox embeds beside the assistant. It uses the guest library the relay serves
// (/mini-app-guest.js), registers its tools with document.modelContext, describes its screen
// through getContext, asks for identity tokens and has its own server check them.
//
// The end-to-end tests serve it on a second loopback listener (another port is another origin);
// `go -C tests run ./sampleapp/serve` serves it by hand (see docs/external-apps.md). With Fixtures set it also
// serves the pages the tests use to misbehave on purpose (fixtures/).
package sampleapp

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/golang-jwt/jwt/v5"
)

//go:embed app fixtures
var files embed.FS

// Options say where the app is embedded and how it checks its tokens.
type Options struct {
	// Host is the origin of the page that embeds the app: the one frame-ancestors names.
	Host string
	// Guest is the address of the guest library; empty means Host + "/mini-app-guest.js".
	Guest string
	// Secret, Audience and Issuer are what the app's server checks an identity token against
	// (GET /api/me with Authorization: Bearer TOKEN): the signing secret it shares with the relay,
	// its audience in the relay's registry, and the relay's issuer. Without a Secret, /api/me
	// refuses every token.
	Secret, Audience, Issuer string
	// Fixtures serves fixtures/ under /fixtures/ too.
	Fixtures bool
	// Omit leaves one embedding header out, for checking `relay check-app` against the app.
	Omit string
	// Ancestors are further origins frame-ancestors names: a fixture framed inside another
	// app's page has that app as an ancestor too.
	Ancestors []string
}

// Handler serves the app with the three embedding headers every external mini-app must send.
func Handler(o Options) http.Handler {
	guest := o.Guest
	if guest == "" {
		guest = strings.TrimSuffix(o.Host, "/") + "/mini-app-guest.js"
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/me", func(w http.ResponseWriter, r *http.Request) { me(w, r, o) })
	mux.HandleFunc("GET /{path...}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("path")
		dir := "app"
		if rest, ok := strings.CutPrefix(name, "fixtures/"); ok && o.Fixtures {
			dir, name = "fixtures", rest
		}
		if name == "" {
			name = "index.html"
		}
		b, err := fs.ReadFile(files, dir+"/"+name)
		if err != nil || strings.Contains(name, "..") {
			http.NotFound(w, r)
			return
		}
		switch path.Ext(name) {
		case ".html":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			b = []byte(strings.ReplaceAll(string(b), "{{GUEST}}", guest))
		case ".js":
			w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		case ".css":
			w.Header().Set("Content-Type", "text/css; charset=utf-8")
		}
		w.Header().Set("Cache-Control", "no-store")
		w.Write(b)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		for name, value := range map[string]string{
			"Content-Security-Policy":      strings.Join(append([]string{"frame-ancestors 'self'", o.Host}, o.Ancestors...), " "),
			"Cross-Origin-Embedder-Policy": "credentialless",
			"Cross-Origin-Resource-Policy": "cross-origin",
		} {
			if !strings.EqualFold(name, o.Omit) {
				h.Set(name, value)
			}
		}
		mux.ServeHTTP(w, r)
	})
}

// me is the app's own backend checking the identity token the relay minted for it, the way any
// app would: the signature with its own secret, its own audience, the relay as issuer, an expiry.
func me(w http.ResponseWriter, r *http.Request, o Options) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	claims := &jwt.RegisteredClaims{}
	var err error
	if !ok || o.Secret == "" {
		err = jwt.ErrTokenMalformed
	} else {
		_, err = jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return []byte(o.Secret), nil },
			jwt.WithValidMethods([]string{"HS256"}), jwt.WithAudience(o.Audience), jwt.WithIssuer(o.Issuer), jwt.WithExpirationRequired())
	}
	if err != nil {
		w.WriteHeader(http.StatusUnauthorized)
		json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"sub": claims.Subject, "aud": claims.Audience, "iss": claims.Issuer, "exp": claims.ExpiresAt.Unix()})
}
