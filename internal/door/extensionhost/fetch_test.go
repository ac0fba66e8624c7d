package extensionhost

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/shared/extensions"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
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
	d := &extensions.Descriptor{ID: "t", Bounds: extensions.Bounds{Hosts: []string{host}, MaxRequests: 100, MaxBytes: 10,
		Secrets: []extensions.Secret{{Name: "TEST_KEY", Header: "X-Api-Key", Hosts: []string{host}}}}}
	f := &Fetcher{Getenv: func(k string) string {
		if k == "TEST_KEY" {
			return "the-key-value"
		}
		return ""
	}}
	ctx := context.Background()

	t.Run("allowed chain with a relative hop", func(t *testing.T) {
		res, err := f.Fetch(ctx, d, nil, allowed.URL+"/chain", NewBudget(10))
		if err != nil {
			t.Fatal(err)
		}
		// As the original: servedBy is the URL that served the body, and via every URL asked,
		// the relative hop resolved.
		want := []string{allowed.URL + "/chain", allowed.URL + "/relative?token=[redacted]", allowed.URL + "/ok"}
		if res.Body != "hello from" || !res.Truncated || res.ServedBy != allowed.URL+"/ok" || strings.Join(res.Via, " ") != strings.Join(want, " ") {
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
			_, err := f.Fetch(ctx, d, nil, allowed.URL+c.path, NewBudget(c.budget))
			if refusal.RuleOf(err) != c.want {
				t.Fatalf("err = %v, want %s", err, c.want)
			}
		})
	}
	t.Run("budget states N of M", func(t *testing.T) {
		b := NewBudget(1)
		if _, err := f.Fetch(ctx, d, nil, allowed.URL+"/ok", b); err != nil {
			t.Fatal(err)
		}
		_, err := f.Fetch(ctx, d, nil, allowed.URL+"/ok", b)
		be, ok := err.(*wire.BudgetError)
		if !ok || be.Budget != (wire.Budget{Used: 1, Max: 1}) || !strings.Contains(err.Error(), "1 of 1 requests used") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("foreign host refused before any request", func(t *testing.T) {
		_, err := f.Fetch(ctx, d, nil, foreign.URL+"/x?api_key=zzz", NewBudget(1))
		if refusal.RuleOf(err) != refusal.HostNotAllowed || strings.Contains(err.Error(), "zzz") {
			t.Fatalf("err = %v", err)
		}
	})
}

// FuzzRedact: whatever the string, Redact answers, and a credential the seeds carry (token=T2
// after a '?') never comes back as it went in.
func FuzzRedact(f *testing.F) {
	f.Add("https://a.example/s?q=cats&token=T2")
	f.Add("https://a.example/%zz?token=T2")
	f.Add("http://u:p@[x/?token=T2")
	f.Fuzz(func(t *testing.T, s string) {
		got := Redact(s)
		if i := strings.IndexByte(s, '?'); i >= 0 && strings.HasSuffix(s, "&token=T2") && strings.Contains(got, "token=T2") {
			t.Fatalf("Redact(%q) = %q kept the token", s, got)
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
	// A URL that does not parse is scrubbed as text, never returned as it came.
	for in, want := range map[string]string{
		"https://a.example/%zz?q=cats&api_key=K1":       "https://a.example/%zz?q=cats&api_key=[redacted]",
		"https://a.example/\x7f?token=T2;sig=S3#key=K4": "https://a.example/\x7f?token=[redacted]&sig=[redacted]&key=[redacted]",
		"http://[::1/?access_token=A":                   "http://[::1/?access_token=[redacted]",
		"https://user:hunter2@[bad/?q=1":                "https://[redacted]@[bad/?q=1",
		"https://user:hunter2@a.example/s?password=P":   "https://user:[redacted]@a.example/s?password=[redacted]",
		"not a url at all, token=T5":                    "not a url at all, token=T5",
		"mailto:a?secret=S6":                            "mailto:a?secret=[redacted]",
	} {
		got := Redact(in)
		if u, err := url.QueryUnescape(got); err == nil {
			got = u
		}
		if got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	d := &extensions.Descriptor{Bounds: extensions.Bounds{Secrets: []extensions.Secret{{Name: "BRAVE_API_KEY", Header: "X-Subscription-Token"}}}}
	if got := secretNames(extensions.AllSecrets(d)); got != "X-Subscription-Token (from $BRAVE_API_KEY)" {
		t.Errorf("secretNames = %s", got)
	}
}

func TestFetchSendsASecretOnlyToItsHosts(t *testing.T) {
	t.Parallel()
	var otherSaw []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherSaw = append(otherSaw, r.Header.Get("Authorization"))
		w.Write([]byte("other"))
	}))
	defer other.Close()
	var keyedSaw []string
	keyed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keyedSaw = append(keyedSaw, r.Header.Get("Authorization"))
		if r.URL.Path == "/hop" {
			http.Redirect(w, r, other.URL+"/landed", http.StatusFound)
			return
		}
		w.Write([]byte("keyed"))
	}))
	defer keyed.Close()
	keyedHost, otherHost := strings.TrimPrefix(keyed.URL, "http://"), strings.TrimPrefix(other.URL, "http://")
	d := &extensions.Descriptor{ID: "t", Bounds: extensions.Bounds{Hosts: []string{keyedHost, otherHost}, MaxRequests: 100,
		Secrets: []extensions.Secret{{Name: "TEST_TOKEN", Header: "Authorization", Prefix: "Bearer ", Hosts: []string{keyedHost}}}}}
	env := map[string]string{"TEST_TOKEN": "tok-1"}
	f := &Fetcher{Getenv: func(k string) string { return env[k] }}
	if _, err := f.Fetch(context.Background(), d, nil, keyed.URL+"/hop", NewBudget(10)); err != nil {
		t.Fatal(err)
	}
	if len(keyedSaw) != 1 || keyedSaw[0] != "Bearer tok-1" {
		t.Fatalf("the secret's own host saw %q", keyedSaw)
	}
	if len(otherSaw) != 1 || otherSaw[0] != "" {
		t.Fatalf("a redirect to another allowed host carried the secret: %q", otherSaw)
	}

	// Unset: nothing is sent (no request, no budget spent), never an empty header.
	delete(env, "TEST_TOKEN")
	budget := NewBudget(10)
	_, err := f.Fetch(context.Background(), d, nil, keyed.URL+"/plain", budget)
	if refusal.RuleOf(err) != refusal.SecretUnset || !strings.Contains(err.Error(), "$TEST_TOKEN") {
		t.Fatalf("err = %v, want secret-unset naming the variable", err)
	}
	if len(keyedSaw) != 1 || budget.used != 0 {
		t.Fatalf("an unset secret still sent a request (%d seen, %d spent)", len(keyedSaw), budget.used)
	}
	// The host without a secret is reached whatever the environment holds.
	if _, err := f.Fetch(context.Background(), d, nil, other.URL+"/plain", budget); err != nil {
		t.Fatal(err)
	}

	// A reserved variable is never read, even if a descriptor got past the gate.
	d.Bounds.Secrets[0].Name = "OPENAI_API_KEY"
	env["OPENAI_API_KEY"] = "sk-vendor"
	if _, err := f.Fetch(context.Background(), d, nil, keyed.URL+"/plain", budget); refusal.RuleOf(err) != refusal.SecretReserved {
		t.Fatalf("err = %v, want secret-reserved", err)
	}
}

func TestFetchTimeBounds(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	defer close(stop)
	mux := http.NewServeMux()
	mux.HandleFunc("/silent", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/trickle", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("first byte"))
		w.(http.Flusher).Flush()
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	})
	// /slow answers after its query's delay: each hop is within the request bound, and the chain
	// of them is not within the call's.
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(40 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		http.Redirect(w, r, "/slow", http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	d := &extensions.Descriptor{ID: "t", Bounds: extensions.Bounds{Hosts: []string{host}, MaxRequests: 1000}}
	for _, c := range []struct {
		name, path string
		req, call  time.Duration
		wantInWhy  string
	}{
		{"a server that never answers", "/silent", 50 * time.Millisecond, time.Minute, "within a request's bound"},
		{"a body that stops", "/trickle", 50 * time.Millisecond, time.Minute, "within a request's bound"},
		{"hops that add up", "/slow", time.Minute, 100 * time.Millisecond, "every request and redirect together"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &Fetcher{RequestTimeout: c.req, CallTimeout: c.call}
			_, err := f.Fetch(context.Background(), d, nil, srv.URL+c.path, NewBudget(1000))
			if refusal.RuleOf(err) != refusal.FetchTimeout || !strings.Contains(err.Error(), c.wantInWhy) {
				t.Fatalf("err = %v, want fetch-timeout saying %q", err, c.wantInWhy)
			}
		})
	}
}
