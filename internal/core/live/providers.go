package live

import (
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Offer is what a provider offers and needs, as it registers.
type Offer struct {
	// Label is the provider's name for people ("OpenAI Realtime").
	Label string
	// InputRate is the rate, in Hz, of the PCM16 the provider takes. Zero means undeclared:
	// such a provider cannot be started.
	InputRate int
	// OutputRate is the rate of the PCM16 it produces.
	OutputRate int
	// Models are the model ids offered, the default first.
	Models []string
	// Aliases map legacy model ids to offered ones (an old setting keeps working).
	Aliases map[string]string
	// Voices are the voices offered, the default first.
	Voices []string
	// Thinking are the thinking depths offered ("" when the provider has none), the default
	// first; ThinkingModels are the models that use them.
	Thinking       []string
	ThinkingModels []string
	// KeyEnv names the environment variable its key comes from.
	KeyEnv string
	// Unavailable, when set, says why the provider cannot run live sessions; it is listed so a
	// person can see why, and Start refuses it with live-provider-unavailable.
	Unavailable string
}

type entry struct {
	factory Factory
	offer   Offer
}

// Providers are the live providers a relay offers (a table of factories, not of apps or tools). It is safe for concurrent use; the zero value is
// empty and ready.
type Providers struct {
	mu sync.RWMutex
	m  map[string]entry
}

// Register adds the provider name, or replaces it whole (an old rate is not kept). A rate of
// zero counts as undeclared (such a provider cannot be started: live-no-input-rate); a negative
// input rate is refused live-input-rate-invalid and registers nothing, an earlier registration
// of the name staying as it was.
func (r *Providers) Register(name string, f Factory, o Offer) error {
	if o.InputRate < 0 {
		return refusal.New(refusal.LiveInputRateInvalid, "the live provider %q declares an input audio rate of %d Hz: a rate is a positive number of samples a second (or zero for none)", name, o.InputRate)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]entry{}
	}
	r.m[name] = entry{factory: f, offer: o}
	return nil
}

// Names returns the registered providers, sorted.
func (r *Providers) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.m))
	for n := range r.m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Offer returns what provider name offers.
func (r *Providers) Offer(name string) (Offer, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.m[name]
	return e.offer, ok
}

// InputRate returns the rate provider name takes, or refuses: live-provider-unknown,
// live-provider-unavailable, or live-no-input-rate when it declared none.
func (r *Providers) InputRate(name string) (int, error) {
	e, rf := r.lookup(name)
	if rf != nil {
		return 0, rf
	}
	return e.offer.InputRate, nil
}

func (r *Providers) lookup(name string) (entry, *refusal.Refusal) {
	r.mu.RLock()
	e, ok := r.m[name]
	r.mu.RUnlock()
	switch {
	case !ok:
		return e, refusal.New(refusal.LiveProviderUnknown, "no live provider is called %q; this relay offers %s", name, strings.Join(r.Names(), ", "))
	case e.offer.Unavailable != "":
		return e, refusal.New(refusal.LiveProviderUnavailable, "%s", e.offer.Unavailable)
	case e.offer.InputRate <= 0 || e.factory == nil:
		return e, refusal.New(refusal.LiveNoInputRate, "the live provider %q declared no input audio rate, so nobody can know what audio to send it", name)
	}
	return e, nil
}

// Choice is a provider, model, voice and thinking depth, as the agent settings hold them.
type Choice struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Voice    string `json:"voice"`
	Thinking string `json:"thinking"`
}

// Resolve checks c against what its provider offers and fills what is empty with the defaults.
// A model or voice of another provider, or of none, is refused (live-model-refused,
// live-voice-refused), and so is a thinking depth not offered (live-thinking-refused); a legacy
// model id is mapped to its replacement. An unavailable provider resolves (so it can be chosen
// and shown), with nothing to fill.
func (r *Providers) Resolve(c Choice) (Choice, error) {
	o, ok := r.Offer(c.Provider)
	if !ok {
		return c, refusal.New(refusal.LiveProviderUnknown, "no live provider is called %q; this relay offers %s", c.Provider, strings.Join(r.Names(), ", "))
	}
	if o.Unavailable != "" {
		if c.Model != "" || c.Voice != "" || c.Thinking != "" {
			return c, refusal.New(refusal.LiveProviderUnavailable, "%s; it has no models or voices to choose", o.Unavailable)
		}
		return c, nil
	}
	if to, ok := o.Aliases[c.Model]; ok {
		c.Model = to
	}
	if c.Model == "" && len(o.Models) > 0 {
		c.Model = o.Models[0]
	}
	if !slices.Contains(o.Models, c.Model) {
		return c, refusal.New(refusal.LiveModelRefused, "%s", r.otherwise("model", c.Model, c.Provider, o.Models, func(x Offer) []string { return x.Models }))
	}
	if c.Voice == "" && len(o.Voices) > 0 {
		c.Voice = o.Voices[0]
	}
	if !slices.Contains(o.Voices, c.Voice) {
		return c, refusal.New(refusal.LiveVoiceRefused, "%s", r.otherwise("voice", c.Voice, c.Provider, o.Voices, func(x Offer) []string { return x.Voices }))
	}
	if !slices.Contains(o.ThinkingModels, c.Model) {
		if c.Thinking != "" {
			return c, refusal.New(refusal.LiveThinkingRefused, "the model %s takes no thinking depth; leave it empty", c.Model)
		}
		return c, nil
	}
	if c.Thinking == "" {
		c.Thinking = o.Thinking[0]
	}
	if !slices.Contains(o.Thinking, c.Thinking) {
		return c, refusal.New(refusal.LiveThinkingRefused, "the thinking depth of %s is one of %s, not %q", c.Model, strings.Join(o.Thinking, ", "), c.Thinking)
	}
	return c, nil
}

// otherwise words the refusal of a model or voice: whose it is, if another provider's, and what
// this provider offers.
func (r *Providers) otherwise(what, value, provider string, offered []string, of func(Offer) []string) string {
	for _, name := range r.Names() {
		if name == provider {
			continue
		}
		if o, ok := r.Offer(name); ok && slices.Contains(of(o), value) {
			return what + " " + quote(value) + " belongs to the " + name + " provider, not " + provider + "; " + provider + " offers " + strings.Join(offered, ", ")
		}
	}
	return provider + " offers no " + what + " " + quote(value) + "; it offers " + strings.Join(offered, ", ")
}

func quote(s string) string { return `"` + s + `"` }
