package scripted_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/scripted"
)

func user(text string) model.Request {
	return model.Request{Model: "demo", Messages: []model.Message{{Role: events.RoleUser, Content: text}}}
}

func Example() {
	c, err := scripted.Parse([]byte(`{
	  "scripted": true,
	  "description": "One tool call, then an answer.",
	  "responses": [
	    {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]},
	    {"content": "2 + 3 = 5", "usage": {"prompt_tokens": 20, "completion_tokens": 5}}
	  ]
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	first, _ := c.Complete(ctx, user("What is 2 + 3?"))
	fmt.Println(first.FinishReason, first.ToolCalls[0].ID, first.ToolCalls[0].Name, first.ToolCalls[0].Arguments)
	second, _ := c.Complete(ctx, user("5"))
	fmt.Println(second.Content, second.Usage.TotalTokens)
	fmt.Println("remaining:", c.Remaining())
	_, err = c.Complete(ctx, user("again?"))
	fmt.Println(model.KindOf(err))
	// Output:
	// tool_calls call_0_0 add {"a":2,"b":3}
	// 2 + 3 = 5 25
	// remaining: 0
	// script
}

func ExampleClient_Stream() {
	c := scripted.New(scripted.Entry{
		Content:   "Reading the file now.",
		ToolCalls: []scripted.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"README.md"}`}},
	})
	resp, err := c.Stream(context.Background(), user("Summarize the README."), func(d model.Delta) {
		switch {
		case d.Content != "":
			fmt.Printf("text %q\n", d.Content)
		case d.ToolName != "":
			fmt.Printf("call %d %s %s\n", d.ToolCallIndex, d.ToolCallID, d.ToolName)
		default:
			fmt.Printf("args %d %q\n", d.ToolCallIndex, d.Arguments)
		}
	})
	fmt.Println(resp.ToolCalls[0].Arguments, err)
	// Output:
	// text "Reading"
	// text " the"
	// text " file"
	// text " now."
	// call 0 c1 read_file
	// args 0 "{\"path\":"
	// args 0 "\"README."
	// args 0 "md\"}"
	// {"path":"README.md"} <nil>
}

// Entries with an agent pattern go to the matching agent only, so agents
// running in parallel each get their own answers whatever the order.
func Example_agents() {
	c := scripted.New(
		scripted.Entry{Agent: "root.pro", Content: "Cats are independent."},
		scripted.Entry{Agent: "root.con", Content: "Dogs are loyal."},
		scripted.Entry{Agent: "root.*", Content: "Both are fine pets."},
	)
	ctx := context.Background()
	for _, agent := range []string{"root.con", "root.pro", "root.judge"} {
		req := user("Debate: cats or dogs?")
		req.Agent = agent
		resp, _ := c.Complete(ctx, req)
		fmt.Printf("%s: %s\n", agent, resp.Content)
	}
	// Output:
	// root.con: Dogs are loyal.
	// root.pro: Cats are independent.
	// root.judge: Both are fine pets.
}

// A failure entry makes the call fail the way a provider would, so retry
// logic can be tested offline.
func Example_failure() {
	c := scripted.New(
		scripted.Entry{Error: &scripted.Failure{Kind: model.KindRateLimit, Status: 429, RetryAfterMS: 1500}},
		scripted.Entry{Content: "ok"},
	)
	_, err := c.Complete(context.Background(), user("hi"))
	var me *model.Error
	if errors.As(err, &me) {
		fmt.Println(me.Kind, me.StatusCode, me.RetryAfter, me.Retryable())
	}
	resp, _ := c.Complete(context.Background(), user("hi"))
	fmt.Println(resp.Content)
	// Output:
	// rate_limit 429 1.5s true
	// ok
}
