// Package jsonview holds the JSON shapes the CLI's --json output and the
// console's API share (a run, a session, a verification), with the
// functions that build them from the read models, so the two cannot drift
// apart. It imports rath, events and projections.
package jsonview
