package console

import "testing"

func TestDefaultWorkerID(t *testing.T) {
	for _, c := range []struct{ id, host, pid string }{
		{"build-7-host-4242-0a1b2c3d", "build-7-host", "4242"},
		{"box-1-ff", "box", "1"},
		{"my-worker", "", ""},
		{"host-12-XYZ", "", ""},
	} {
		m := defaultWorkerID.FindStringSubmatch(c.id)
		host, pid := "", ""
		if m != nil {
			host, pid = m[1], m[2]
		}
		if host != c.host || pid != c.pid {
			t.Errorf("%q: host %q pid %q, want %q %q", c.id, host, pid, c.host, c.pid)
		}
	}
}
