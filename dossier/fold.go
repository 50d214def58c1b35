package dossier

import (
	"fmt"
	"strings"

	"github.com/gorath/rath/events"
)

// fold walks the run's events once, in seq order.
func (b *builder) fold(evs []events.Event) {
	b.created = map[string]bool{}
	b.appended = map[chunkRef]int64{}
	b.author = map[string]string{}
	b.entries = map[string]map[string]int{}
	b.pendingTools = map[pair][]*ToolCall{}
	b.open = map[pair][]int{}
	d := b.d
	for _, ev := range evs {
		out := Event{Event: ev}
		p, err := ev.Decode()
		b.payloads = append(b.payloads, p)
		if err != nil {
			b.warn("seq %d (%s): %v", ev.Seq, ev.Type, err)
			out.Summary = "(does not decode: " + oneLine(err.Error(), 120) + ")"
			d.Events = append(d.Events, out)
			continue
		}
		out.Summary = summarize(p)
		if r, ok := p.(events.BlobReferrer); ok {
			out.refs = r.BlobRefs()
		}
		d.Events = append(d.Events, out)
		switch e := p.(type) {
		case *events.RunStarted:
			d.Run.StartedAt, d.Run.Params = ev.At, e.Params
			b.touch(e.InputSession)
		case *events.RunFinished:
			d.Run.FinishedAt = ev.At
			b.touch(e.OutputSession)
		case *events.SessionCreated:
			b.touch(e.Session)
			b.created[e.Session] = true
		case *events.SessionForked:
			b.touch(e.Source, e.Session)
			b.created[e.Session] = true
		case *events.SessionDetached:
			b.touch(e.Source, e.Session)
			b.created[e.Session] = true
		case *events.SessionMerged:
			for _, p := range e.Parents {
				b.touch(p.ID)
			}
			b.touch(e.Session)
			b.created[e.Session] = true
		case *events.SessionCompressed:
			b.touch(e.Source, e.Session)
			b.created[e.Session] = true
		case *events.SessionImported:
			b.touch(e.Session)
			b.created[e.Session] = true
		case *events.SessionPlaced:
			b.touch(e.Session)
		case *events.ChunkAppended:
			b.touch(e.Session)
			b.appended[chunkRef{e.Session, e.Index}] = ev.Seq
		case *events.WorkflowEntered:
			b.touch(e.Session)
			b.setAuthor(e.Session, e.Path)
			if b.entries[e.Session] == nil {
				b.entries[e.Session] = map[string]int{}
			}
			b.entries[e.Session][e.Path]++
			k := pair{e.Session, e.Path}
			b.open[k] = append(b.open[k], len(d.Workflows))
			d.Workflows = append(d.Workflows, WorkflowSpan{Path: e.Path, Workflow: e.Workflow, Depth: strings.Count(e.Path, "."),
				Session: e.Session, EnterSeq: ev.Seq})
		case *events.WorkflowExited:
			b.touch(e.InputSession, e.Session)
			b.setAuthor(e.Session, e.Path)
			k := pair{e.InputSession, e.Path}
			if n := len(b.open[k]); n > 0 {
				w := &d.Workflows[b.open[k][n-1]]
				b.open[k] = b.open[k][:n-1]
				w.Output, w.ExitSeq, w.Error = e.Session, ev.Seq, e.Error
			} else {
				b.warn("seq %d: workflow %s exited without being entered in this run", ev.Seq, e.Path)
			}
		case *events.ToolCalled:
			b.touch(e.Session)
			t := &ToolCall{Anchor: b.ids.make("tool", fmt.Sprint(ev.Seq)), Seq: ev.Seq, Session: e.Session, Agent: e.Agent,
				CallID: e.CallID, Tool: e.Tool, Arguments: e.Arguments, Backend: e.Backend, SandboxID: e.SandboxID}
			k := pair{e.Session, e.CallID}
			b.pendingTools[k] = append(b.pendingTools[k], t)
			d.Tools = append(d.Tools, t)
		case *events.ToolReturned:
			b.touch(e.Session)
			k := pair{e.Session, e.CallID}
			var t *ToolCall
			if q := b.pendingTools[k]; len(q) > 0 {
				t, b.pendingTools[k] = q[0], q[1:]
			} else {
				t = &ToolCall{Anchor: b.ids.make("tool", fmt.Sprint(ev.Seq)), Seq: ev.Seq, Session: e.Session, Agent: e.Agent,
					CallID: e.CallID, Tool: e.Tool}
				d.Tools = append(d.Tools, t)
				b.warn("seq %d: tool call %s returned without a recorded tool.called", ev.Seq, e.CallID)
			}
			t.Returned, t.ReturnSeq, t.OutputRef, t.OutputSize = true, ev.Seq, e.OutputRef, e.OutputSize
			t.ExitCode, t.DurationMS, t.IsError, t.ErrorKind, t.Error = e.ExitCode, e.DurationMS, e.IsError, e.ErrorKind, e.Error
			if t.Backend == "" {
				t.Backend, t.SandboxID = e.Backend, e.SandboxID
			}
			for _, f := range e.Files {
				t.Files = append(t.Files, FileDiff{Path: f.Path, Before: f.Before, After: f.After, Status: fileStatus(f)})
			}
			for _, a := range e.Attachments {
				t.Attachments = append(t.Attachments, Attachment{ToolAttachment: a})
			}
			t.Truncated = e.Truncated
		case *events.ProviderCalled:
			b.touch(e.Session)
			d.Providers = append(d.Providers, &ProviderCall{Anchor: b.ids.make("call", fmt.Sprint(ev.Seq)), Seq: ev.Seq, Stream: ev.Stream,
				Session: e.Session, Agent: e.Agent, Provider: e.Provider, Model: e.Model, Attempt: e.Attempt, Streamed: e.Streamed,
				Usage: e.Usage, LatencyMS: e.LatencyMS, Digest: e.Digest})
			d.Run.Usage = d.Run.Usage.Add(e.Usage)
		case *events.ProviderFailed:
			b.touch(e.Session)
			d.Providers = append(d.Providers, &ProviderCall{Anchor: b.ids.make("call", fmt.Sprint(ev.Seq)), Seq: ev.Seq, Stream: ev.Stream,
				Session: e.Session, Agent: e.Agent, Provider: e.Provider, Model: e.Model, Attempt: e.Attempt, LatencyMS: e.LatencyMS,
				Digest: e.Digest, Failed: true, ErrorKind: e.ErrorKind, Error: e.Error, WillRetry: e.WillRetry})
		case *events.SelectorDecided:
			b.touch(e.Session)
			d.Decisions = append(d.Decisions, Decision{Seq: ev.Seq, Session: e.Session, Path: e.Path, Candidates: e.Candidates,
				Chosen: e.Chosen, Attempts: e.Attempts, Reason: e.Reason})
		case *events.AgentCapped:
			b.touch(e.Session)
		case *events.MemoryRemembered:
			b.touch(e.Session)
			d.Memory = append(d.Memory, MemoryEvent{Seq: ev.Seq, Type: ev.Type, Namespace: e.Namespace, ID: e.ID, Text: e.Text, Meta: e.Meta, Session: e.Session})
		case *events.MemoryForgotten:
			d.Memory = append(d.Memory, MemoryEvent{Seq: ev.Seq, Type: ev.Type, Namespace: e.Namespace, ID: e.ID})
		case *events.MemoryRecalled:
			b.touch(e.Session)
			d.Memory = append(d.Memory, MemoryEvent{Seq: ev.Seq, Type: ev.Type, Namespace: e.Namespace, Query: e.Query, K: e.K,
				Hits: e.Hits, Session: e.Session, Agent: e.Agent})
		case *events.MemoryCommitted:
			b.touch(e.Session)
			d.Memory = append(d.Memory, MemoryEvent{Seq: ev.Seq, Type: ev.Type, Namespace: e.Namespace, IDs: e.IDs, Model: e.Model, Session: e.Session})
		}
	}
}

func fileStatus(f events.FileChange) string {
	switch {
	case f.Before == "":
		return FileCreated
	case f.After == "":
		return FileDeleted
	}
	return FileModified
}
