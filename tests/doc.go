// Package tests is the end-to-end layer, a Go module of its own (so chromedp stays out of the
// product's module): the real relay binary (bin/relay, from ./build.sh build) and the real page in
// headless Chromium. Each file tests one part as a person meets it (the page, files, channel,
// assistant, live voice, mini-apps and their walls, external apps, extensions, sessions, the
// binary run alone) and its benchmarks measure the same paths; package harness starts what they
// need. Run them with ./build.sh test e2e, or go -C tests test -run NAME ./.
package tests
