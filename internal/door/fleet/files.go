package fleet

import (
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/voicebox-go/voicebox/internal/core/hoststate"
)

// filesBucket holds the state files the relays share, keyed by the hex of the name.
const filesBucket = "files"

// Files are state files shared by the fleet (a hoststate.Files): the agent settings, so a
// choice made through one relay is the one every relay's next live session starts with. Vendor
// keys are never kept here.
type Files struct{ f *Fleet }

// Files returns the fleet's shared state files.
func (f *Fleet) Files() *Files { return &Files{f: f} }

var _ hoststate.Files = (*Files)(nil)

// ReadFile implements hoststate.Files.
func (s *Files) ReadFile(name string, max int64) ([]byte, error) {
	if !hoststate.ValidFileName(name) {
		return nil, fmt.Errorf("fleet: %q is not a file name", name)
	}
	ctx, cancel, kv, err := s.f.op(filesBucket)
	if err != nil {
		return nil, err
	}
	defer cancel()
	e, err := kv.Get(ctx, hex.EncodeToString([]byte(name)))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, s.f.unavailable(err)
	}
	if int64(len(e.Value())) > max {
		return nil, fmt.Errorf("fleet: %s is over %d bytes", name, max)
	}
	return e.Value(), nil
}

// WriteFile implements hoststate.Files.
func (s *Files) WriteFile(name string, data []byte) error {
	if !hoststate.ValidFileName(name) {
		return fmt.Errorf("fleet: %q is not a file name", name)
	}
	ctx, cancel, kv, err := s.f.op(filesBucket)
	if err != nil {
		return err
	}
	defer cancel()
	if _, err := kv.Put(ctx, hex.EncodeToString([]byte(name)), data); err != nil {
		return s.f.unavailable(err)
	}
	return nil
}
