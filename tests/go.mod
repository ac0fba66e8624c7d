module github.com/voicebox-go/voicebox/tests

go 1.26.0

require (
	github.com/chromedp/cdproto v0.160.4
	github.com/chromedp/chromedp v0.23.1
	github.com/golang-jwt/jwt/v5 v5.3.1
	github.com/voicebox-go/voicebox v0.0.0
)

require (
	github.com/aymanbagabas/go-udiff v0.4.2 // indirect
	github.com/coder/websocket v1.8.15 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
)

// The end-to-end tests always run against the product in this checkout.
replace github.com/voicebox-go/voicebox => ../
