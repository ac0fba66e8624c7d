package extensions

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/shared/extensions"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/wire"
)

func TestMediatedFetch(t *testing.T) {
	t.Parallel()
	foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("foreign")) }))
	defer foreign.Close()
	var sawKey string
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		sawKey = r.Header.Get("X-Api-Key")
		w.Write([]byte("hello from the allowed host"))
	})
	mux.HandleFunc("/relative", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "ok", http.StatusFound) })
	mux.HandleFunc("/chain", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/relative?token=s3cret", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, foreign.URL+"/x", http.StatusFound) })
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(strings.Repeat("a", 100))) })
	allowed := httptest.NewServer(mux)
	defer allowed.Close()
	host := strings.TrimPrefix(allowed.URL, "http://")
	d := &extensions.Descriptor{ID: "t", Bounds: extensions.Bounds{Hosts: []string{host}, MaxRequests: 100, MaxBytes: 10}}
	tool := extensions.Tool{Name: "get", Primitive: extensions.HTTPGet, Headers: []extensions.EnvHeader{{Name: "X-Api-Key", Env: "TEST_KEY"}}}
	f := &Fetcher{Getenv: func(k string) string {
		if k == "TEST_KEY" {
			return "the-key-value"
		}
		return ""
	}}
	ctx := context.Background()

	t.Run("allowed chain with a relative hop", func(t *testing.T) {
		res, err := f.Fetch(ctx, d, tool, allowed.URL+"/chain", NewBudget(10))
		if err != nil {
			t.Fatal(err)
		}
		if res.Body != "hello from" || !res.Truncated || res.ServedBy != allowed.URL || len(res.Via) != 2 {
			t.Fatalf("result %+v", res)
		}
		if strings.Contains(strings.Join(res.Via, " "), "s3cret") || !strings.Contains(res.Via[1], "token=[redacted]") {
			t.Fatalf("via not redacted: %v", res.Via)
		}
		if sawKey != "the-key-value" {
			t.Fatalf("the env header was not sent: %q", sawKey)
		}
	})
	for _, c := range []struct {
		name, path string
		budget     int
		want       refusal.Rule
	}{
		{"redirect to a foreign host", "/away", 10, refusal.RedirectHostNotAllowed},
		{"too many redirects", "/loop", 100, refusal.TooManyRedirects},
		{"over budget within a chain", "/chain", 2, refusal.BudgetExhausted},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.Fetch(ctx, d, tool, allowed.URL+c.path, NewBudget(c.budget))
			if refusal.RuleOf(err) != c.want {
				t.Fatalf("err = %v, want %s", err, c.want)
			}
		})
	}
	t.Run("budget states N of M", func(t *testing.T) {
		b := NewBudget(1)
		if _, err := f.Fetch(ctx, d, tool, allowed.URL+"/ok", b); err != nil {
			t.Fatal(err)
		}
		_, err := f.Fetch(ctx, d, tool, allowed.URL+"/ok", b)
		be, ok := err.(*wire.BudgetError)
		if !ok || be.Budget != (wire.Budget{Used: 1, Max: 1}) || !strings.Contains(err.Error(), "1 of 1 requests used") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("foreign host refused before any request", func(t *testing.T) {
		_, err := f.Fetch(ctx, d, tool, foreign.URL+"/x?api_key=zzz", NewBudget(1))
		if refusal.RuleOf(err) != refusal.HostNotAllowed || strings.Contains(err.Error(), "zzz") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestRedact(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://a.example/s?q=cats&api_key=K1&token=T2": "https://a.example/s?q=cats&api_key=[redacted]&token=[redacted]",
		"https://a.example/s?key=abc":                    "https://a.example/s?key=[redacted]",
		"https://a.example/s?q=keys":                     "https://a.example/s?q=keys",
	} {
		got, _ := url.QueryUnescape(Redact(in))
		if got != want {
			t.Errorf("Redact(%s) = %s, want %s", in, got, want)
		}
	}
	if got := HeaderNames(extensions.Tool{Headers: []extensions.EnvHeader{{Name: "X-Subscription-Token", Env: "BRAVE_API_KEY"}}}); got != "X-Subscription-Token (from $BRAVE_API_KEY)" {
		t.Errorf("HeaderNames = %s", got)
	}
}
