// Command serve runs the sample external mini-app, Order Book, by hand:
//
//	go -C tests run ./sampleapp/serve [--addr 127.0.0.1:5190] [--host http://127.0.0.1:8787]
//
// It prints the MINI_APPS entry that registers it with a relay at --host; start the relay with
// that in its environment and open the app from the page's Apps panel.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/voicebox-go/voicebox/tests/sampleapp"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:5190", "`host:port` to serve the app on (a loopback address)")
	host := flag.String("host", "http://127.0.0.1:8787", "the `origin` of the Voicebox page that embeds the app")
	secret := flag.String("secret", "", "the app's token signing `secret`, shared with the relay's registry (default: a fresh random one)")
	flag.Parse()
	if *secret == "" {
		b := make([]byte, 32)
		rand.Read(b)
		*secret = hex.EncodeToString(b)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	origin := "http://" + ln.Addr().String()
	entry := map[string]any{"orders": map[string]any{
		"name": "Order Book", "description": "The team's order book: the open orders, their customers and their status.",
		"url": origin + "/", "origin": origin, "icon": "cart",
		"capabilities": []string{"auth"}, "audience": "orders-app", "secret": *secret,
	}}
	b, _ := json.Marshal(entry)
	fmt.Printf("Order Book on %s\n\nStart the relay with:\n\n  MINI_APPS='%s' bin/relay serve\n\n", origin, strings.ReplaceAll(string(b), "'", `'\''`))
	h := sampleapp.Handler(sampleapp.Options{Host: strings.TrimSuffix(*host, "/"), Secret: *secret, Audience: "orders-app", Issuer: strings.TrimSuffix(*host, "/")})
	if err := http.Serve(ln, h); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
