package main

import (
	"testing"
)

// The workload runs end to end at a small N and measures what it says.
func TestRun_SmallThread(t *testing.T) {
	r, err := run(t.Context(), 300)
	if err != nil {
		t.Fatal(err)
	}
	if r.rawBytes != 300*200 || r.dbBytes <= r.rawBytes || r.historyEvents != 300 || r.appendAtN <= 0 || r.fork <= 0 || r.at <= 0 {
		t.Fatalf("result = %+v", r)
	}
}
