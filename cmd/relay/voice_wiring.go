package main

import (
	"flag"
	"fmt"
	"net"
	"net/url"

	"github.com/voicebox-go/voicebox/internal/core/live/gemini"
	"github.com/voicebox-go/voicebox/internal/core/live/openai"
)

func vendorFlags(fs *flag.FlagSet, cfg *serveConfig) {
	fs.StringVar(&cfg.openaiURL, "openai-url", "", "OpenAI Realtime `endpoint` for live voice (default $VOICEBOX_OPENAI_URL, else "+openai.DefaultURL+")")
	fs.StringVar(&cfg.geminiURL, "gemini-url", "", "Gemini Live `endpoint` for live voice (default $VOICEBOX_GEMINI_URL, else the BidiGenerateContent endpoint)")
}

// vendorURLs reads the vendor endpoints the flags or the environment name, by provider; each
// is checked (checkVendorURL).
func (cfg *serveConfig) vendorURLs() (map[string]string, error) {
	urls := map[string]string{}
	for _, v := range []struct{ provider, flag, env, value string }{
		{openai.Name, "--openai-url", "VOICEBOX_OPENAI_URL", orEnv(cfg.openaiURL, "VOICEBOX_OPENAI_URL")},
		{gemini.Name, "--gemini-url", "VOICEBOX_GEMINI_URL", orEnv(cfg.geminiURL, "VOICEBOX_GEMINI_URL")},
	} {
		if v.value == "" {
			continue
		}
		if err := checkVendorURL(v.value); err != nil {
			return nil, fmt.Errorf("%s (%s): %v", v.flag, v.env, err)
		}
		urls[v.provider] = v.value
	}
	return urls, nil
}

// checkVendorURL accepts a wss:// endpoint, or a ws:// one on a loopback host (a local fixture):
// a key must never cross a network in the clear.
func checkVendorURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" {
		return fmt.Errorf("%q is not a ws:// or wss:// URL", s)
	}
	switch u.Scheme {
	case "wss":
		return nil
	case "ws":
		host := u.Hostname()
		if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
			return nil
		}
		return fmt.Errorf("%q would send the vendor key unencrypted; use wss://, or ws:// only to a loopback address", s)
	}
	return fmt.Errorf("%q is not a ws:// or wss:// URL", s)
}
