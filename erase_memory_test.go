package rath_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/internal/storetest"
	"github.com/gorath/rath/keyring/keyringtest"
)

// An erasure of a memory namespace purges its memories from the memory
// index in place: afterwards no file of the index holds their text,
// another namespace's memories still recall, and the index is the same
// one (its files were not rebuilt beside it and swapped in).
func TestErase_PurgesTheMemoryIndexInPlace(t *testing.T) {
	ctx := t.Context()
	rt, err := rath.OpenWith(ctx, rath.Options{Dir: t.TempDir(), KEK: keyringtest.KEK(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	m, err := rt.Memory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const alice, bob = "zqxalicecanary", "zqxbobcanary"
	for i := range 20 {
		for ns, canary := range map[string]string{"notes-alice": alice, "notes-bob": bob} {
			if _, err := m.Remember(ctx, ns, fmt.Sprintf("note %d: the user said %s", i, canary), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := m.Recall(ctx, "notes-bob", bob, 5); err != nil { // waits for the index
		t.Fatal(err)
	}
	dir := filepath.Join(rt.Dir(), rath.MemoryDir)
	if n := storetest.CountInDir(t, dir, alice); n == 0 {
		t.Fatal("alice's canary is in no file of the memory index before the erasure: the test would prove nothing")
	}
	inode := func() uint64 {
		st, err := os.Stat(filepath.Join(dir, "index_meta.json"))
		if err != nil {
			t.Fatal(err)
		}
		return st.Sys().(*syscall.Stat_t).Ino
	}
	before := inode()
	if _, err := rt.Erase(ctx, rath.EraseOptions{Subject: "memory:notes-alice", By: "test", Reason: "asked"}); err != nil {
		t.Fatal(err)
	}
	if n := storetest.CountInDir(t, dir, alice); n != 0 {
		t.Errorf("after the erasure alice's canary is %d times in the memory index", n)
	}
	if inode() != before {
		t.Errorf("the erasure rebuilt the whole memory index")
	}
	hits, err := m.Recall(ctx, "notes-bob", bob, 50)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 20 || !strings.Contains(hits[0].Text, bob) {
		t.Errorf("bob's memories recall %d hits, want 20: %v", len(hits), hits)
	}
	if hits, err = m.Recall(ctx, "notes-alice", alice, 50); err != nil || len(hits) != 0 {
		t.Errorf("alice's erased memories still recall: %v, %v", hits, err)
	}
}
