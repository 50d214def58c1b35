package dossier_test

import (
	"strings"
	"testing"

	"github.com/gorath/rath/dossier"
)

// The attestation of a run's bundle, when given, is shown: who signed,
// who witnessed, the checkpoint; hostile names are escaped. Without one
// the dossier shows none.
func TestBuild_Attestation(t *testing.T) {
	f := mustFixture(t)
	if html := render(t, f.d, "html"); strings.Contains(html, `id="attestation"`) {
		t.Fatal("an attestation section without a bundle")
	}
	at := &dossier.Attestation{Bundle: "b", SignedBy: "log.example/<b>", KeyID: "abc123", WitnessedBy: []string{"w1.example", "w2.example"},
		Origin: "log.example", Size: 93, Root: "n+3f=", FirstSeq: 3, LastSeq: 90, Replay: "reproduced 88 of 88 events"}
	d, err := dossier.Build(t.Context(), f.rt, f.run, dossier.Options{Attestation: at, SkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	html := between(t, render(t, d, "html"), `id="attestation"`, "</table>")
	for _, want := range []string{"log.example/&lt;b&gt;", "key abc123", "NOT pinned", "w1.example, w2.example; no witness pinned", "size 93", "seqs 3–90", "reproduced 88 of 88 events"} {
		if !strings.Contains(html, want) {
			t.Errorf("attestation section lacks %q:\n%s", want, html)
		}
	}
	if md := render(t, d, "md"); !strings.Contains(md, "**Attested:** signed by") || !strings.Contains(md, "witnessed by w1.example, w2.example; no witness pinned") {
		t.Errorf("Markdown lacks the attestation:\n%s", md)
	}
	// Pinned keys are said to be pinned, with the witnesses' key ids.
	at.LogKeyPinned, at.WitnessesPinned = true, true
	at.WitnessKeys = []dossier.Witness{{Name: "w1.example", KeyID: "def456", Pinned: true}, {Name: "w2.example", KeyID: "789abc"}}
	if md := render(t, d, "md"); !strings.Contains(md, "(key `abc123`, pinned), witnessed by w1.example (key def456, pinned), w2.example (key 789abc, NOT pinned); checkpoint") {
		t.Errorf("Markdown lacks the pinned attestation:\n%s", md)
	}
}
