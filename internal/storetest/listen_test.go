package storetest_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/storetest"
)

// A store that only appends (a submit) opens no LISTEN connection; the
// first Notify starts one, Close ends it, and a subscriber that asked
// before the LISTEN was in place still sees a commit made meanwhile.
func TestPostgres_ListenerStartsWithTheFirstSubscriber(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	name := fmt.Sprintf("conf%d", dbs.Add(1))
	dsn, err := server.CreateDatabase(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	probe, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	listeners := func() int {
		t.Helper()
		var n int
		if err := probe.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND query LIKE 'LISTEN %'`, name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitFor := func(want int) {
		t.Helper()
		for listeners() != want {
			if ctx.Err() != nil {
				t.Fatalf("LISTEN connections: %d, want %d", listeners(), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	tg := storetest.Target{Dir: t.TempDir(), DSN: dsn}
	writer := storetest.OpenStore(t, tg)
	if _, err := writer.Append(ctx, "s", eventlog.AnyVersion, &events.SessionPlaced{Session: "s", Backend: "local", Spec: "a"}); err != nil {
		t.Fatal(err)
	}
	// A listener started at Open would show up within this second.
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if n := listeners(); n != 0 {
			t.Fatalf("an appending store holds %d LISTEN connections", n)
		}
	}

	reader := storetest.OpenStore(t, tg)
	got := make(chan int64, 4)
	go func() {
		for ev, err := range reader.Subscribe(ctx, eventlog.Query{FromSeq: 2}) {
			if err != nil {
				return
			}
			got <- ev.Seq
		}
	}()
	waitFor(1)
	if _, err := writer.Append(ctx, "s", eventlog.AnyVersion, &events.SessionPlaced{Session: "s", Backend: "local", Spec: "b"}); err != nil {
		t.Fatal(err)
	}
	select {
	case seq := <-got:
		if seq != 2 {
			t.Fatalf("subscriber got seq %d, want 2", seq)
		}
	case <-ctx.Done():
		t.Fatal("the subscriber never saw the commit")
	}
	if err := reader.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(0)
}
