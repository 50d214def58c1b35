package model_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/gorath/rath/flow/model"
)

// A registry of vendors a program fills: here one rule-based vendor of
// its own. Providers name a vendor by its Name (the config file's
// "kind"); its EnvPrefix names the environment variables that select and
// configure it (SHOUT_API_KEY, SHOUT_BASE_URL, SHOUT_DEFAULT_MODEL).
func ExampleRegistry() {
	shout := model.Vendor{Name: "shout", EnvPrefix: "SHOUT", New: func(c model.Config) (model.Client, error) {
		return model.ClientFunc(func(_ context.Context, req model.Request) (model.Response, error) {
			last := req.Messages[len(req.Messages)-1].Content
			return model.Response{Content: strings.ToUpper(last) + "!"}, nil
		}), nil
	}}
	models := model.NewRegistry(shout)
	c, err := models.New("shout", model.Config{Model: "loud"})
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, _ := c.Complete(context.Background(), model.Request{Messages: []model.Message{{Role: "user", Content: "hello"}}})
	fmt.Println(resp.Content)
	_, err = models.New("whisper", model.Config{})
	fmt.Println(err)
	// Output:
	// HELLO!
	// model: unknown vendor "whisper" (known: [shout])
}
