//go:build js && voicebox_worker

package opfs

import (
	"context"
	"testing"
)

// TestWorkerRootsReadThroughSyncHandles shows that in the page's worker the OPFS root takes the
// fast path the design asks for, so the conformance run there covers the pool.
func TestWorkerRootsReadThroughSyncHandles(t *testing.T) {
	r, err := OpenOPFS(context.Background(), testArea)
	if err != nil {
		t.Fatal(err)
	}
	if !r.UsesSyncHandles() {
		t.Fatal("in a dedicated worker the OPFS root does not use sync access handles")
	}
	if FromHandle(r.Handle()).UsesSyncHandles() {
		t.Fatal("a handle root uses sync access handles, which only OPFS offers")
	}
}
