package fleet_test

import (
	"fmt"
	"testing"

	"github.com/gorath/rath/fleet"
)

// River's connections to PostgreSQL (its pool and its listener's) carry
// the event store's TCP keepalives and user timeout, so that a worker
// stalled while River holds a job row is cut off in seconds too, and
// names of their own.
func TestFleet_RiverConnectionsBoundStalls(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn, err := server.CreateDatabase(ctx, fmt.Sprintf("fleetconn%d", dbs.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := openRuntime(ctx, t.TempDir(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	fl, err := fleet.Open(ctx, rt, fleet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	for _, tt := range []struct{ name, want string }{
		{"tcp_keepalives_idle", "5"},
		{"tcp_keepalives_interval", "2"},
		{"tcp_keepalives_count", "3"},
		{"tcp_user_timeout", "10000"},
	} {
		pool, listener, err := fl.Setting(ctx, tt.name)
		if err != nil {
			t.Fatal(err)
		}
		if pool != tt.want || listener != tt.want {
			t.Errorf("%s: River's pool has %q, its listener %q, want %q", tt.name, pool, listener, tt.want)
		}
	}
	// Each says what it is for, beside the event store's connections.
	pool, listener, err := fl.Setting(ctx, "application_name")
	if err != nil {
		t.Fatal(err)
	}
	if pool != fleet.AppRiver || listener != fleet.AppRiverListen {
		t.Errorf("application_name: River's pool has %q, its listener %q, want %q and %q", pool, listener, fleet.AppRiver, fleet.AppRiverListen)
	}
}
