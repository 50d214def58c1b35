package dossier_test

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/gorath/rath"
	"github.com/gorath/rath/dossier"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/session"
)

// Build a dossier of a recorded run and Render it as Markdown and HTML; the HTML is one
// self-contained page.
func ExampleBuild() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "rath-dossier-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	rt, err := rath.Open(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	add, err := flow.NewTool("add", "Add two integers.", func(_ context.Context, _ *session.Session, a struct{ A, B int }) (string, error) {
		return fmt.Sprint(a.A + a.B), nil
	})
	if err != nil {
		log.Fatal(err)
	}
	model := scripted.New(
		scripted.Entry{ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "add", Arguments: `{"A":2,"B":40}`}}},
		scripted.Entry{Content: "2 + 40 = 42"},
	)
	p, err := flow.ResolveProvider(flow.Provider{Client: model, Model: "scripted"}, flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: dir + "/none.json"})
	if err != nil {
		log.Fatal(err)
	}
	agent, err := flow.NewAgent("You add numbers.", p, flow.WithTools(add))
	if err != nil {
		log.Fatal(err)
	}
	input, err := rt.NewUserSession(ctx, "What is 2 + 40?")
	if err != nil {
		log.Fatal(err)
	}
	run, err := rt.Start(ctx, "adder", agent, input, rath.WithRunID("run-example"), rath.WithSeed("example"))
	if err != nil {
		log.Fatal(err)
	}

	d, err := dossier.Build(ctx, rt, run.ID, dossier.Options{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d session, %d tool call, %d provider calls, chain verified: %v\n",
		len(d.Sessions), len(d.Tools), len(d.Providers), d.Chain.Verify.OK())
	fmt.Printf("%s(%s) = %s\n", d.Tools[0].Tool, d.Tools[0].Arguments, d.Tools[0].Output)

	var md strings.Builder
	if err := d.Render(&md, "md"); err != nil {
		log.Fatal(err)
	}
	first, _, _ := strings.Cut(md.String(), "\n")
	fmt.Println(first)

	var html strings.Builder
	if err := d.Render(&html, "html"); err != nil {
		log.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(html.String()))
	sc.Scan()
	fmt.Println(sc.Text(), strings.Contains(html.String(), "<script"))
	// Output:
	// 1 session, 1 tool call, 2 provider calls, chain verified: true
	// add({"A":2,"B":40}) = 42
	// # Evidence dossier: run <code>run-example</code>
	// <!DOCTYPE html> false
}
