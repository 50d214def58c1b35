package textsplit_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gorath/rath/flow/model/internal/textsplit"
)

func TestWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"one", []string{"one"}},
		{"Hello big  world", []string{"Hello", " big", "  world"}},
		{"  lead and trail  ", []string{"  lead", " and", " trail", "  "}},
		{"line\nbreak", []string{"line", "\nbreak"}},
		{"héllo wörld", []string{"héllo", " wörld"}},
	}
	for _, tt := range tests {
		got := textsplit.Words(tt.in)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Words(%q) (-want +got):\n%s", tt.in, diff)
		}
		if strings.Join(got, "") != tt.in {
			t.Errorf("Words(%q) does not concatenate back", tt.in)
		}
	}
}

func TestFragments(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want []string
	}{
		{"", 4, nil},
		{`{"q":"x"}`, 4, []string{`{"q"`, `:"x"`, `}`}},
		{"abc", 0, []string{"a", "b", "c"}},
		{"aé", 2, []string{"aé"}}, // é is two bytes: not cut in the middle
		{"éé", 1, []string{"é", "é"}},
	}
	for _, tt := range tests {
		got := textsplit.Fragments(tt.in, tt.n)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Fragments(%q, %d) (-want +got):\n%s", tt.in, tt.n, diff)
		}
	}
}
