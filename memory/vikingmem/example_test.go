package vikingmem_test

import (
	"context"
	"fmt"
	"os"

	"github.com/gorath/rath"
	"github.com/gorath/rath/memory"
	"github.com/gorath/rath/memory/openvikingtest"
)

// A runtime whose memory is an OpenViking server (here the test double):
// remember, then recall with the hit's URI, level and score.
func Example() {
	srv := openvikingtest.New(openvikingtest.Options{})
	defer srv.Close()
	dir, _ := os.MkdirTemp("", "vikingmem-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	rt, err := rath.OpenWith(ctx, rath.Options{Dir: dir,
		MemoryBackend: memory.BackendConfig{Backend: "openviking", URL: srv.URL, User: "alice"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	mem, err := rt.MemoryBackend(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	id, _ := mem.Remember(ctx, "user/ana", "ana prefers short answers", nil)
	fmt.Println(id)
	hits, _ := mem.Recall(ctx, "user/ana", "short answers", 3)
	for _, h := range hits {
		fmt.Printf("level %d, score %.1f: %s\n", *h.Level, h.Score, h.Text)
	}
	// Output:
	// viking://user/alice/memories/rath/user%2Fana/m-5a5e3aa5c370e5d524df.md
	// level 2, score 1.0: ana prefers short answers
}
