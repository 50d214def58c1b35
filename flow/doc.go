// Package flow turns sessions into work: workflows, agents and the session
// loop, providers with retries and budgets, tools, the Compressor and the
// Selector.
//
// A [Workflow] is anything with Forward(ctx, *session.Session)
// (*session.Session, error). Composition is plain Go: a workflow struct
// holds child workflows as fields; [Sequential] and [Parallel] are
// provided, [Func] adapts a function, [Empty] does nothing.
//
// # Module paths
//
// Every workflow run through [Forward] (and every built-in one) records
// workflow.entered and workflow.exited with a module path such as
// "root.review.critic": the top workflow is "root", a child is named after
// the struct field that holds it, its given name ([Named], [WithName]) or
// its position. Chunks written inside carry the path as their author.
//
// # Agents
//
// [Agent.Forward] runs the session loop: agent head plus session chunks go
// to the model, the assistant chunk is appended, tool calls run (parallel
// where tools say they are safe), each call's tool.returned is recorded as
// soon as it finishes, the result chunks are appended in call order, until the model calls no tool or the round cap is hit, which is
// recorded and returned as a [*MaxRoundsError]. Every model attempt is
// recorded (provider.called with request and response blobs,
// provider.failed), and a bad tool call becomes a tool_result chunk with a
// typed error kind, never a crash.
//
// What it may import is the allowedImports table in the repository's
// style_test.go, which the tests enforce.
package flow
