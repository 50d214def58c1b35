package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath/sandbox"
)

func (s *suite) testIsolation(t *testing.T) {
	if !s.caps.Isolated {
		t.Skipf("%s: Capabilities.Isolated is false", s.b.Name())
	}
	sb := s.open(t)
	// The host's processes: this test process must be invisible.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := s.sh(t, sb, fmt.Sprintf("cat /proc/%d/cmdline 2>/dev/null | tr '\\0' ' '; echo", os.Getpid()))
	if strings.Contains(out, filepath.Base(self)) {
		t.Errorf("the sandbox sees the host test process: %q", out)
	}
	procs := s.sh(t, sb, "ls /proc | grep -c '^[0-9]' || true")
	t.Logf("processes visible in the sandbox: %s", strings.TrimSpace(procs))

	// A host file outside the workspace can be neither read nor changed.
	outside := filepath.Join(t.TempDir(), "host-secret.txt")
	if err := os.WriteFile(outside, []byte("host secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := s.exec(t, sb, sandbox.ExecRequest{Command: fmt.Sprintf("cat %[1]s; echo overwritten > %[1]s; rm -f %[1]s", outside)})
	if strings.Contains(string(res.Stdout), "host secret") {
		t.Errorf("the sandbox read a host file outside the workspace")
	}
	if data, err := os.ReadFile(outside); err != nil || string(data) != "host secret\n" {
		t.Errorf("host file after the command: %q, %v", data, err)
	}
	// System directories are read-only.
	res = s.exec(t, sb, sandbox.ExecRequest{Command: "touch /usr/rath-sandboxtest-probe || touch /etc/rath-sandboxtest-probe || exit 0; echo WROTE"})
	if strings.Contains(string(res.Stdout), "WROTE") {
		t.Errorf("the sandbox wrote into a system directory")
	}
}

func (s *suite) testNetwork(t *testing.T) {
	sb := s.open(t)
	// A listener on every host interface. With the capability, a command
	// must reach it (which proves the probe works); without it, nothing
	// may arrive.
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	accepted := make(chan struct{}, 64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			accepted <- struct{}{}
		}
	}()
	targets := []string{"127.0.0.1"}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() {
			targets = append(targets, ip.IP.String())
		}
	}
	var probe strings.Builder
	probe.WriteString("command -v bash >/dev/null || { echo NO_BASH; exit 0; }\n")
	for _, ip := range targets {
		fmt.Fprintf(&probe, "timeout 5 bash -c 'exec 3<>/dev/tcp/%s/%d' 2>/dev/null && echo CONNECTED %s\n", ip, port, ip)
	}
	probe.WriteString("true\n")
	out := s.sh(t, sb, probe.String())
	if strings.Contains(out, "NO_BASH") {
		t.Fatalf("%s: the network probe needs bash inside the sandbox, and there is none", s.b.Name())
	}
	got := 0
	wait := time.After(2 * time.Second)
	if !s.caps.Network {
		wait = time.After(200 * time.Millisecond)
	}
collect:
	for {
		select {
		case <-accepted:
			got++
			if s.caps.Network {
				break collect // one connection proves the capability
			}
		case <-wait:
			break collect
		}
	}
	switch {
	case s.caps.Network && got == 0:
		t.Errorf("Network capability: no connection from the sandbox reached the host listener (probe output %q, targets %v)", out, targets)
	case !s.caps.Network && (got > 0 || strings.Contains(out, "CONNECTED")):
		t.Errorf("no-network sandbox reached a host listener %d times (probe output %q)", got, out)
	}
	t.Logf("targets %v: %d connections, probe output %q", targets, got, out)
}

func (s *suite) testClose(t *testing.T) {
	sb, err := s.b.Open(t.Context(), s.opts.Spec(t))
	if err != nil {
		t.Fatal(err)
	}
	// A running command is killed by Close.
	done := make(chan error, 1)
	var res sandbox.ExecResult
	go func() {
		var err error
		res, err = sb.Exec(context.Background(), sandbox.ExecRequest{Command: "touch started; sleep 600", Timeout: 10 * time.Minute})
		done <- err
	}()
	for i := 0; ; i++ {
		if _, err := sb.Stat(t.Context(), "started"); err == nil {
			break
		}
		if i == 3000 {
			t.Fatal("the command never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := sb.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("exec survived Close: %+v", res)
		}
	case <-time.After(killBound):
		t.Fatal("Close did not end a running command")
	}
	if err := sb.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	_, err = sb.ReadFile(t.Context(), "started")
	if !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("read after close: %v, want ErrClosed", err)
	}
	_, err = sb.Exec(t.Context(), sandbox.ExecRequest{Command: "true"})
	if !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("exec after close: %v, want ErrClosed", err)
	}
}
