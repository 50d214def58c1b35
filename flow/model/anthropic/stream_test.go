package anthropic_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model/modeltest"
)

func TestClient_StreamToolCallWithoutArguments(t *testing.T) {
	// The API sends input {} for a call without arguments; the call's
	// Arguments say so in both Complete and Stream.
	srv := modeltest.NewAnthropic(t)
	srv.Push(modeltest.Reply{ToolCalls: []events.ToolCall{{ID: "toolu_1", Name: "now"}}})
	got, err := MustClient(t, srv).Stream(t.Context(), userReq("time?"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]events.ToolCall{{ID: "toolu_1", Name: "now", Arguments: "{}"}}, got.ToolCalls); diff != "" {
		t.Fatalf("tool calls (-want +got):\n%s", diff)
	}
}
