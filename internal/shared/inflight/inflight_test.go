package inflight

import (
	"testing"
	"time"
)

// TestWaitEndsWhenTheWorkDoes: an idle Count is idle at once; one with work waits for its end,
// and a wait whose work does not end within its bound says so; work may begin during a wait.
func TestWaitEndsWhenTheWorkDoes(t *testing.T) {
	var c Count
	if !c.Wait(0) {
		t.Fatal("the zero Count is not idle")
	}
	c.Add()
	if n := c.Len(); n != 1 {
		t.Fatalf("a Count with one piece of work says %d", n)
	}
	if c.Wait(time.Millisecond) {
		t.Fatal("a Count with work in progress waited to idle")
	}
	ended := make(chan bool)
	go func() { ended <- c.Wait(time.Minute) }()
	c.Add() // begins during the wait
	c.Done()
	c.Done()
	if !<-ended {
		t.Fatal("the wait did not see the work end")
	}
	c.Add()
	c.Done()
	if !c.Wait(0) || c.Len() != 0 {
		t.Fatal("a Count whose work ended again is not idle")
	}
}
