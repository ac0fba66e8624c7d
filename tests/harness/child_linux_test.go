//go:build linux

package harness

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// orphanEnv, when set, makes TestTheRelaysOfAKilledTestBinaryDie's helper run in this binary: it
// starts a relay, prints its PID and waits to be killed.
const orphanEnv = "VOICEBOX_HARNESS_ORPHAN"

// childBound bounds each wait of the case: the helper's relay to start, and to be gone.
const childBound = 20 * time.Second

// TestTheRelaysOfAKilledTestBinaryDie: a test binary killed (-9, as go test's -timeout or a
// person does) takes the relay it started with it, rather than leaving it listening.
func TestTheRelaysOfAKilledTestBinaryDie(t *testing.T) {
	if os.Getenv(orphanEnv) != "" {
		r := StartRelay(t)
		fmt.Printf("relay-pid %d\n", r.PID())
		time.Sleep(childBound * 2) // killed long before
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestTheRelaysOfAKilledTestBinaryDie$", "-test.count=1")
	cmd.Env = append(os.Environ(), orphanEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pids := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "relay-pid "); ok {
				pid, _ := strconv.Atoi(v)
				pids <- pid
			}
		}
	}()
	var pid int
	select {
	case pid = <-pids:
	case <-time.After(childBound):
		t.Fatal("the helper test binary printed no relay PID")
	}
	if !alive(pid) {
		t.Fatalf("the helper's relay %d is not running before the kill", pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	for deadline := time.Now().Add(childBound); alive(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL) // ours: started by the helper this test started
			t.Fatalf("the relay %d outlived its killed test binary by %v", pid, childBound)
		}
	}
}

// alive reports whether pid is a process that has not exited (a zombie waiting for its parent
// to read its status counts as exited).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
