package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/door/extensionhost"
	"github.com/voicebox-go/voicebox/internal/door/fleet"
	"github.com/voicebox-go/voicebox/internal/door/fleet/fleettest"
)

// TestPairInAFleet: `relay pair --nats` pairs, lists and revokes in the fleet's shared
// pairings, which every relay of the fleet reads, not in the state directory's file.
func TestPairInAFleet(t *testing.T) {
	t.Parallel()
	srv := fleettest.Start(t)
	dir := filepath.Join(t.TempDir(), "state")
	pair := func(args ...string) (string, int) {
		var out, errs bytes.Buffer
		code := runPair(append([]string{"--state-dir", dir, "--nats", srv.URL(), "--nats-prefix", "cli"}, args...), &out, &errs)
		return out.String() + errs.String(), code
	}
	out, code := pair("build-box")
	if code != 0 {
		t.Fatalf("pair: %d %s", code, out)
	}
	bearer := strings.TrimSpace(strings.SplitN(out, "\n", 2)[0])
	f, err := fleet.Connect(fleet.Config{URL: srv.URL(), Prefix: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if name, ok, err := f.Pairings().Lookup(bearer); err != nil || !ok || name != "build-box" {
		t.Fatalf("the fleet's pairings: %q %v %v", name, ok, err)
	}
	if out, code := pair("--list"); code != 0 || !strings.Contains(out, "build-box") {
		t.Fatalf("list: %d %s", code, out)
	}
	if out, code := pair("--revoke", "build-box"); code != 0 {
		t.Fatalf("revoke: %d %s", code, out)
	}
	if _, ok, _ := f.Pairings().Lookup(bearer); ok {
		t.Fatal("the revoked bearer still passes in the fleet")
	}
}

// TestApprovalCodeInAFleet: `relay approval-code --nats` shows the code a relay of the fleet
// printed, read from the fleet's store, not from the state directory (where there is none).
func TestApprovalCodeInAFleet(t *testing.T) {
	t.Parallel()
	srv := fleettest.Start(t)
	f, err := fleet.Connect(fleet.Config{URL: srv.URL(), Prefix: "clicodes"})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	adm := extensionhost.NewAdmissionsIn(t.TempDir(), f.Extensions(), nil)
	if _, err := adm.Stage([]byte(`{"id":"clock","name":"Clock","capabilities":["clock"],"tools":[{"name":"clock_now","primitive":"now"}]}`)); err != nil {
		t.Fatal(err)
	}
	code, err := adm.RequestCode("clock", "client 127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "state")
	var out, errs bytes.Buffer
	if rc := runApprovalCode([]string{"--state-dir", dir, "--nats", srv.URL(), "--nats-prefix", "clicodes"}, &out, &errs); rc != 0 || !strings.Contains(out.String(), code+"  (extension clock") {
		t.Fatalf("approval-code --nats: %d %q %q", rc, out.String(), errs.String())
	}
	out.Reset()
	if rc := runApprovalCode([]string{"--state-dir", dir}, &out, &errs); rc == 0 {
		t.Fatalf("the state directory alone shows a fleet's code: %q", out.String())
	}
}

// TestNATSReplicasAreRead: --nats-replicas, else VOICEBOX_NATS_REPLICAS, sets the fleet's
// replicas; a count NATS cannot keep, or one without --nats, is refused.
func TestNATSReplicasAreRead(t *testing.T) {
	if c, err := settleNATS(fleet.Config{URL: "nats://127.0.0.1:4222", Replicas: 3}); err != nil || c.Replicas != 3 {
		t.Fatalf("--nats-replicas 3: %+v %v", c, err)
	}
	t.Setenv("VOICEBOX_NATS_REPLICAS", "3")
	if c, err := settleNATS(fleet.Config{URL: "nats://127.0.0.1:4222"}); err != nil || c.Replicas != 3 {
		t.Fatalf("VOICEBOX_NATS_REPLICAS=3: %+v %v", c, err)
	}
	if _, err := settleNATS(fleet.Config{}); err == nil {
		t.Fatal("replicas without --nats were taken")
	}
	for _, bad := range []string{"0", "6", "three"} {
		t.Setenv("VOICEBOX_NATS_REPLICAS", bad)
		if _, err := settleNATS(fleet.Config{URL: "nats://127.0.0.1:4222"}); err == nil {
			t.Errorf("VOICEBOX_NATS_REPLICAS=%s was taken", bad)
		}
	}
}
