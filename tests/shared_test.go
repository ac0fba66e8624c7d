//go:build !js

package tests

import "github.com/voicebox-go/voicebox/tests/harness"

// The helpers the end-to-end packages share (this one and tests/mcpapps, which runs beside it as
// a test binary of its own) live in the harness; these are their names in this package.
const (
	readyBound     = harness.ReadyBound
	workspaceReady = harness.WorkspaceReady
)

var (
	openWorkspace      = harness.OpenWorkspace
	clip               = harness.Clip
	postAPI            = harness.PostAPI
	getListing         = harness.GetListing
	planTools          = harness.PlanTools
	offeredTools       = harness.OfferedTools
	waitListing        = harness.WaitListing
	admitRemote        = harness.AdmitRemote
	startListeningNode = harness.StartListeningNode
)
