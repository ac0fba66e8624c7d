package externalapps

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

const issuer = "https://voicebox.example.com"

func verify(token, secret, audience string, at time.Time) (*jwt.RegisteredClaims, error) {
	claims := &jwt.RegisteredClaims{}
	_, err := jwt.ParseWithClaims(token, claims, func(*jwt.Token) (any, error) { return []byte(secret), nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithAudience(audience), jwt.WithIssuer(issuer),
		jwt.WithExpirationRequired(), jwt.WithTimeFunc(func() time.Time { return at }))
	return claims, err
}

func TestMintedTokensCarryTheRegisteredAudienceAndTheAppsOwnSecret(t *testing.T) {
	t.Parallel()
	reg, err := Parse([]byte(goodRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	m := &Minter{Registry: reg, Issuer: issuer, Now: func() time.Time { return now }}
	tok, err := m.Mint("orders", "session-1")
	if err != nil {
		t.Fatal(err)
	}
	if tok.ExpiresAt != now.Add(TokenTTL).UnixMilli() {
		t.Fatalf("expiresAt = %d", tok.ExpiresAt)
	}
	claims, err := verify(tok.Token, secretA, "orders-app", now.Add(time.Minute))
	if err != nil {
		t.Fatalf("the library refused a fresh token: %v", err)
	}
	if claims.Issuer != issuer || claims.Subject != "session-1" || len(claims.Audience) != 1 || claims.Audience[0] != "orders-app" {
		t.Fatalf("claims = %+v", claims)
	}
	if !claims.ExpiresAt.Time.Equal(now.Add(TokenTTL)) || claims.ID == "" {
		t.Fatalf("exp %v, jti %q", claims.ExpiresAt, claims.ID)
	}

	// Expired: refused by the library.
	if _, err := verify(tok.Token, secretA, "orders-app", now.Add(TokenTTL+time.Second)); !errors.Is(err, jwt.ErrTokenExpired) {
		t.Fatalf("an expired token: %v", err)
	}
	// Another app's secret cannot verify it, and another app's audience does not match it.
	if _, err := verify(tok.Token, secretB, "orders-app", now); !errors.Is(err, jwt.ErrTokenSignatureInvalid) {
		t.Fatalf("verified with the CRM's secret: %v", err)
	}
	if _, err := verify(tok.Token, secretA, "crm", now); !errors.Is(err, jwt.ErrTokenInvalidAudience) {
		t.Fatalf("accepted for the CRM's audience: %v", err)
	}
	// The CRM's own token verifies with its own secret only.
	crm, err := m.Mint("crm", "session-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verify(crm.Token, secretB, "crm", now); err != nil {
		t.Fatalf("the CRM's token: %v", err)
	}
	if _, err := verify(crm.Token, secretA, "crm", now); err == nil {
		t.Fatal("the orders secret verified the CRM's token")
	}

	if _, err := m.Mint("wiki", "s"); refusal.RuleOf(err) != refusal.ExternalAppNoAuth {
		t.Fatalf("an app without the auth capability: %v", err)
	}
	if _, err := m.Mint("nobody", "s"); refusal.RuleOf(err) != refusal.ExternalAppUnknown {
		t.Fatalf("an unknown app: %v", err)
	}
}

func TestRoutesServeTheListingAndMintTokens(t *testing.T) {
	t.Parallel()
	reg, err := Parse([]byte(goodRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Public: dir, Log: slog.New(slog.DiscardHandler), Origin: "https://voicebox.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	Register(srv, &Minter{Registry: reg, Issuer: issuer}, nil)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)

	do := func(method, path, origin, ctype, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if strings.Contains(string(raw), secretA) || strings.Contains(string(raw), secretB) {
			t.Fatalf("%s %s leaked a secret: %s", method, path, raw)
		}
		var v map[string]any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s %s answered %d %s", method, path, resp.StatusCode, raw)
		}
		return resp.StatusCode, v
	}
	page := "https://voicebox.example.com"

	status, list := do("GET", "/mini-apps", page, "", "")
	apps, _ := list["apps"].([]any)
	if status != 200 || len(apps) != 3 {
		t.Fatalf("GET /mini-apps: %d %v", status, list)
	}
	first := apps[0].(map[string]any)
	if first["id"] != "crm" || first["origin"] != "https://crm.example.com" || first["secret"] != nil {
		t.Fatalf("the first app is %v", first)
	}

	// The caller cannot choose the audience: the route reads no field at all.
	if status, v := do("POST", "/mini-apps/orders/token", page, "application/json", `{"audience": "crm"}`); status != 400 || v["refused"] != "malformed-json" {
		t.Fatalf("a body naming an audience: %d %v", status, v)
	}
	status, v := do("POST", "/mini-apps/orders/token", page, "application/json", "{}")
	if status != 200 {
		t.Fatalf("mint: %d %v", status, v)
	}
	claims, err := verify(v["token"].(string), secretA, "orders-app", time.Now())
	if err != nil || claims.Subject != "local" {
		t.Fatalf("the minted token: %v %+v", err, claims)
	}
	if status, v := do("POST", "/mini-apps/wiki/token", page, "application/json", "{}"); status != 403 || v["refused"] != "external-app-no-auth" {
		t.Fatalf("a token for an app without auth: %d %v", status, v)
	}
	if status, v := do("POST", "/mini-apps/ghost/token", page, "application/json", "{}"); status != 404 || v["refused"] != "external-app-unknown" {
		t.Fatalf("a token for an unknown app: %d %v", status, v)
	}
	// Admitted like the page's other routes: another site's page is refused.
	if status, v := do("POST", "/mini-apps/orders/token", "https://evil.example", "", ""); status != 403 || v["refused"] != "origin-refused" {
		t.Fatalf("a foreign origin: %d %v", status, v)
	}
	if status, v := do("GET", "/mini-apps", "https://evil.example", "", ""); status != 403 || v["refused"] != "origin-refused" {
		t.Fatalf("a foreign origin listing: %d %v", status, v)
	}
}
