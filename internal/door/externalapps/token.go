package externalapps

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// TokenTTL is how long an identity token is valid. A frame can stay open for hours; the guest
// library asks for a new token before this runs out.
const TokenTTL = 5 * time.Minute

// Minter signs identity tokens for the apps of a registry: HS256 with the app's own secret, the
// app's registered audience, the relay as issuer, and an expiry TokenTTL ahead. The zero value is
// not usable: Registry and Issuer must be set.
type Minter struct {
	Registry *Registry
	// Issuer is the iss claim: the relay's public origin, or its loopback address.
	Issuer string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Token is a minted token and when it expires.
type Token struct {
	Token     string `json:"token"`
	ExpiresAt int64  `json:"expiresAt"` // Unix milliseconds
}

// Mint signs a token for appID about subject. It refuses an app that is not registered
// (external-app-unknown) or that did not declare the auth capability (external-app-no-auth):
// an app that never asked for identity never causes a credential to exist. The audience comes
// from the registry only; nothing the caller sends can change it.
func (m *Minter) Mint(appID, subject string) (Token, error) {
	a, ok := m.Registry.Get(appID)
	if !ok {
		return Token{}, refusal.New(refusal.ExternalAppUnknown, "no external mini-app is registered as %q", appID)
	}
	if !a.HasAuth() {
		return Token{}, refusal.New(refusal.ExternalAppNoAuth, "the app %q did not declare the auth capability, so it gets no identity token", appID)
	}
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	t := now().Truncate(time.Second)
	exp := t.Add(TokenTTL)
	id := make([]byte, 16)
	rand.Read(id)
	claims := jwt.RegisteredClaims{
		Issuer:    m.Issuer,
		Subject:   subject,
		Audience:  jwt.ClaimStrings{a.Audience},
		ExpiresAt: jwt.NewNumericDate(exp),
		NotBefore: jwt.NewNumericDate(t),
		IssuedAt:  jwt.NewNumericDate(t),
		ID:        hex.EncodeToString(id),
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(a.Secret))
	if err != nil {
		return Token{}, refusal.New(refusal.InternalError, "the token for %q could not be signed", appID)
	}
	return Token{Token: s, ExpiresAt: exp.UnixMilli()}, nil
}
