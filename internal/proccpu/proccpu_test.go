package proccpu_test

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/gorath/rath/internal/proccpu"
)

// A child that burns CPU is counted in its parent's tree while it runs
// and after it was reaped, and not in the parent's own CPU.
func TestTree_CountsLiveAndReapedChildren(t *testing.T) {
	self := os.Getpid()
	before, err := proccpu.Tree(self)
	if err != nil {
		t.Fatal(err)
	}
	own, err := proccpu.Process(self)
	if err != nil {
		t.Fatal(err)
	}
	// A shell loop: a few tenths of a second of CPU. Until Wait reaps it,
	// the child stays in /proc (a zombie once done), counted as live.
	cmd := exec.Command("sh", "-c", `i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); done`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	live, err := proccpu.Tree(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	after, err := proccpu.Tree(self)
	if err != nil {
		t.Fatal(err)
	}
	child := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if child < 50*time.Millisecond {
		t.Fatalf("the child used %v of CPU, too little to tell from 10 ms ticks", child)
	}
	if live <= before {
		t.Errorf("the tree's CPU while a busy child ran: %v, before %v", live, before)
	}
	if got := after - before; got < child/2 {
		t.Errorf("the tree grew by %v across a child that used %v", got, child)
	}
	if ownAfter, _ := proccpu.Process(self); ownAfter-own >= child/2 {
		t.Errorf("the process's own CPU grew by %v, counting its child's %v", ownAfter-own, child)
	}
}

func TestProcess_NoSuchProcess(t *testing.T) {
	if _, err := proccpu.Process(1 << 30); err == nil {
		t.Fatal("no error for a process that does not exist")
	}
	if _, err := proccpu.Tree(0); err == nil {
		t.Fatal("no error for pid 0")
	}
}
