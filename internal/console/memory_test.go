package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gorath/rath/access"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/console"
)

// The memory browser: namespaces with counts, a namespace listed newest
// first without a query, each memory with its provenance, and forget with
// a reason that the tombstone keeps; refusals write nothing.
func TestMemory_NamespacesBrowseProvenanceForget(t *testing.T) {
	f := newFixture(t, "")
	ctx := t.Context()
	mem, err := f.rt.Memory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Remember(ctx, "notes", "first note "+hostile, nil); err != nil {
		t.Fatal(err)
	}
	last, err := mem.Remember(ctx, "notes", "second note", map[string]string{"agent": "root.planner"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.rt.Session(ctx, outputOf(t, f.rt, f.run))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Commit(ctx, "lessons", out); err != nil {
		t.Fatal(err)
	}

	nss := decode[[]console.NamespaceView](t, f.get(t, "/api/memory/namespaces", ""))
	if len(nss) != 2 || nss[0].Namespace != "lessons" || nss[1].Namespace != "notes" || nss[1].Live != 2 {
		t.Fatalf("namespaces = %+v", nss)
	}
	notes := decode[console.MemoryListView](t, f.get(t, "/api/memory/list?ns=notes", ""))
	if notes.Total != 2 || len(notes.Items) != 2 || notes.Items[0].ID != last || notes.Items[0].Agent != "root.planner" || notes.Items[0].At == "" {
		t.Fatalf("notes = %+v", notes)
	}
	lessons := decode[console.MemoryListView](t, f.get(t, "/api/memory/list?ns=lessons&limit=1", ""))
	if lessons.Total < 2 || len(lessons.Items) != 1 || lessons.Items[0].Session != out.ID() || lessons.Items[0].Run != f.run || lessons.Items[0].Agent == "" {
		t.Fatalf("lessons = %+v", lessons)
	}

	head, _ := f.rt.Store().Head(ctx)
	for _, bad := range []struct {
		body string
		csrf bool
		code int
	}{
		{`{"ns":"notes","id":"` + last + `","reason":"stale","by":"ann"}`, false, http.StatusForbidden},
		{`{"ns":"notes","id":"` + last + `","by":"ann"}`, true, http.StatusBadRequest},
		{`{"ns":"notes","id":"mem-nosuch","reason":"stale","by":"ann"}`, true, http.StatusNotFound},
		{`{"ns":"notes","id":"` + last + `","reason":"stale","by":"ann","extra":1}`, true, http.StatusBadRequest},
	} {
		if res, body := f.postJSON(t, "/api/memory/forget", bad.body, bad.csrf); res.StatusCode != bad.code {
			t.Errorf("forget %s: %s %s", bad.body, res.Status, body)
		}
	}
	if after, _ := f.rt.Store().Head(ctx); after != head {
		t.Fatalf("a refused forget wrote: head %v -> %v", head, after)
	}
	res, body := f.postJSON(t, "/api/memory/forget", `{"ns":"notes","id":"`+last+`","reason":"out of date","by":"ann"}`, true)
	if res.StatusCode != http.StatusOK || !decode[console.ForgetView](t, body).ReasonRecorded {
		t.Fatalf("forget: %s %s", res.Status, body)
	}
	notes = decode[console.MemoryListView](t, f.get(t, "/api/memory/list?ns=notes", ""))
	if notes.Total != 1 || strings.Contains(f.get(t, "/api/memory/list?ns=notes", ""), "second note") {
		t.Fatalf("after forget: %+v", notes)
	}
	evs, err := f.rt.Store().ReadStream(ctx, events.MemoryStream("notes"), 1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := evs[len(evs)-1].Decode()
	if err != nil {
		t.Fatal(err)
	}
	if tomb, ok := p.(*events.MemoryForgotten); !ok || tomb.Reason != "out of date" || tomb.By != access.Local("").Subject || tomb.ID != last {
		t.Fatalf("tombstone = %+v", p)
	}
	if res, _ := f.do(t, "GET", "/api/memory/list", nil); res.StatusCode != http.StatusBadRequest {
		t.Fatalf("list without ns: %s", res.Status)
	}
}
