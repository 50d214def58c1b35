package replay

import (
	"testing"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
)

func TestRequestChange(t *testing.T) {
	base := func() model.Request {
		return model.Request{Model: "m", Messages: []model.Message{{Role: "system", Content: "You sort."}, {Role: "user", Content: "hi"}}}
	}
	tests := []struct {
		name string
		edit func(*model.Request)
		want string
	}{
		{"system prompt reworded", func(r *model.Request) { r.Messages[0].Content = "You sort carefully." }, ChangeWording},
		{"no tools as an empty list", func(r *model.Request) { r.Tools = []model.ToolSpec{} }, ChangeWording},
		{"a tool offered", func(r *model.Request) { r.Tools = []model.ToolSpec{{Name: "ls"}} }, ChangeStructural},
		{"another message", func(r *model.Request) { r.Messages = append(r.Messages, model.Message{Role: "user", Content: "more"}) }, ChangeStructural},
		{"other tool arguments", func(r *model.Request) {
			r.Messages[1].ToolCalls = []events.ToolCall{{ID: "c1", Name: "ls", Arguments: `{"dir":"/"}`}}
		}, ChangeStructural},
		{"another model", func(r *model.Request) { r.Model = "m2" }, ChangeStructural},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := base()
			tt.edit(&got)
			if c := requestChange(base(), got); c != tt.want {
				t.Fatalf("requestChange = %q, want %q", c, tt.want)
			}
		})
	}
}

func TestPayloadChange(t *testing.T) {
	tests := []struct {
		name, want, got, change string
	}{
		{"text only", `{"role":"assistant","content":"a"}`, `{"role":"assistant","content":"b"}`, ChangeWording},
		{"other tool", `{"tool":"ls","arguments":"{}"}`, `{"tool":"cat","arguments":"{}"}`, ChangeStructural},
		{"a field more", `{"content":"a"}`, `{"content":"a","name":"x"}`, ChangeStructural},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if c := payloadChange("t", tt.want, "t", tt.got); c != tt.change {
				t.Fatalf("payloadChange = %q, want %q", c, tt.change)
			}
		})
	}
}
