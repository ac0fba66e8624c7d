package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"

	"github.com/voicebox-go/voicebox/cmd/relay/internal/checkapp"
	"github.com/voicebox-go/voicebox/internal/door/externalapps"
)

// loadMiniApps reads the external mini-app registry from the file named by --mini-apps, else from
// the JSON in $MINI_APPS; neither means no apps. The error names where the registry came from,
// then the entry and field.
func loadMiniApps(file string) (*externalapps.Registry, error) {
	source, raw := "MINI_APPS", []byte(os.Getenv("MINI_APPS"))
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--mini-apps: %v", err)
		}
		source, raw = "--mini-apps "+file, b
	}
	reg, err := externalapps.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", source, err)
	}
	return reg, nil
}

// pageOrigins are the origins the page is served at: the public one, and the loopback ones on
// the port ln listens on.
func pageOrigins(public, scheme string, ln net.Listener) []string {
	out := []string{}
	if public != "" {
		out = append(out, public)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
		port := strconv.Itoa(tcp.Port)
		for _, h := range []string{"127.0.0.1", "localhost", "[::1]"} {
			out = append(out, scheme+"://"+h+":"+port)
		}
	}
	return out
}

// sharesPageOrigin returns an app registered at one of the page's own origins: framed there, it
// would be same-origin with the page and reach everything the page holds.
func sharesPageOrigin(reg *externalapps.Registry, origins []string) (externalapps.App, bool) {
	for _, a := range reg.Apps() {
		for _, o := range origins {
			if a.Origin == o {
				return a, true
			}
		}
	}
	return externalapps.App{}, false
}

// checkAppDefaultHost says what --host of `relay check-app` defaults to.
var checkAppDefaultHost = "$VOICEBOX_ORIGIN, else http://127.0.0.1:" + strconv.Itoa(DefaultPort)

// runCheckApp is `relay check-app`; the page's origin defaults to $VOICEBOX_ORIGIN, else the
// relay's default loopback address.
func runCheckApp(args []string, stdout, stderr io.Writer) int {
	host := os.Getenv("VOICEBOX_ORIGIN")
	if host == "" {
		host = "http://127.0.0.1:" + strconv.Itoa(DefaultPort)
	}
	return checkapp.Main(args, stdout, stderr, host)
}
