//go:build tools

// Package tools pins the programs build.sh builds for the test run, in a module of their own so
// that their dependencies (wasmbrowsertest needs chromedp v0.16.0) never mix with the product's.
package tools

import _ "github.com/agnivade/wasmbrowsertest"
