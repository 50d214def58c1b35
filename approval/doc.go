// Package approval is the person in the loop: a run that needs a tool call
// approved, or a question answered, records approval.requested and
// suspends (flow.ErrWaiting); anyone, from any process, later records the
// decision here with Decide, and the run continues (a fleet worker, or
// replay.Resume). A request lives on its own stream (events.ApprovalStream):
// the request at version 1, the decision at version 2, so the store's
// optimistic concurrency lets exactly one of concurrent deciders win.
package approval
