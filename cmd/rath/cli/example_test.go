package cli_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/gorath/rath"
	"github.com/gorath/rath/cmd/rath/cli"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/session"
)

// A program registers its workflows in Config.Setup, so its own build of
// the rath CLI can replay (and resume) their runs by name.
func ExampleRun() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rath-cli-example")
	defer os.RemoveAll(dir)

	// The program's workflow; a real one would be agents and tools.
	shout := flow.Func(func(ctx context.Context, s *session.Session) (*session.Session, error) {
		last, _ := s.Last()
		return s.Append(ctx, session.Chunk{Role: events.RoleAssistant, Content: strings.ToUpper(last.Content)})
	})

	// Record a run of it.
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	input, _ := rt.NewUserSession(ctx, "hello")
	run, err := rt.Start(ctx, "shout", shout, input)
	if err != nil {
		log.Fatal(err)
	}
	rt.Close()

	// Its main would be cli.Main(cfg); Run is the same with explicit I/O.
	cfg := cli.Config{Setup: func(_ context.Context, rt *rath.Runtime) error {
		rt.Register("shout", shout)
		return nil
	}}
	var out strings.Builder
	code := cli.Run(ctx, cfg, []string{"--dir", dir, "replay", run.ID}, os.Stdin, &out, os.Stderr)
	fmt.Println(code, strings.HasPrefix(out.String(), "reproduced:"))
	// Output: 0 true
}
