// Package demo is rath's offline multi-agent demo: a planner reads an
// issue in a sandboxed workspace, a coder writes code with the file tools
// and runs the tests with the shell tool, a reviewer rejects the first
// patch (the workflow forks from the plan and tries again), approves the
// second, the lesson is committed to memory, and a Selector decides when
// the work is done.
//
// The model's turns come from a scripted cassette shipped with the
// package and labelled as scripted; the tools, the sandbox, the events,
// the memory and the session graph are real. With a live provider the
// same workflow runs against a real model.
package demo
