package mcptool

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rendered is a tool result as rath records it: the text the model reads,
// and the parts kept beside it (their bytes in blobs, parallel to the
// attachments that have a Ref).
type rendered struct {
	text        string
	blobs       [][]byte
	attachments []events.ToolAttachment
	truncated   *events.Truncation
}

// render turns a tool result into the text the model reads and the
// attachments kept as evidence: text parts as they are; binary parts
// (images, audio, binary resources) described by type, size and hash and
// kept as blobs; resource links and text resources in the text and listed
// as attachments; structured content kept as JSON (and shown as the text
// when there is no other content).
func render(res *mcp.CallToolResult) rendered {
	var (
		parts []string
		r     rendered
	)
	keep := func(kind, mime, uri, name string, data []byte) string {
		r.blobs = append(r.blobs, data)
		r.attachments = append(r.attachments, events.ToolAttachment{Kind: kind, MIME: mime, Ref: eventlog.BlobHash(data), Size: len(data), URI: uri, Name: name})
		return fmt.Sprintf("[%s %s, %d bytes, sha256 %s]", kind, mime, len(data), eventlog.BlobHash(data))
	}
	for _, c := range res.Content {
		switch v := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, v.Text)
		case *mcp.ImageContent:
			parts = append(parts, keep("image", v.MIMEType, "", "", v.Data))
		case *mcp.AudioContent:
			parts = append(parts, keep("audio", v.MIMEType, "", "", v.Data))
		case *mcp.ResourceLink:
			name := firstOf(v.Title, v.Name, v.Description)
			r.attachments = append(r.attachments, events.ToolAttachment{Kind: "resource_link", MIME: v.MIMEType, URI: v.URI, Name: name})
			parts = append(parts, fmt.Sprintf("[resource link %s: %s]", v.URI, name))
		case *mcp.EmbeddedResource:
			res := v.Resource
			switch {
			case res == nil:
				parts = append(parts, "[empty resource]")
			case res.Blob != nil:
				parts = append(parts, fmt.Sprintf("[resource %s] ", res.URI)+keep("resource", res.MIMEType, res.URI, "", res.Blob))
			default:
				r.attachments = append(r.attachments, events.ToolAttachment{Kind: "resource", MIME: res.MIMEType, URI: res.URI, Size: len(res.Text)})
				parts = append(parts, fmt.Sprintf("[resource %s]\n%s", res.URI, res.Text))
			}
		default:
			parts = append(parts, fmt.Sprintf("[%T content]", c))
		}
	}
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			if len(parts) == 0 {
				parts = append(parts, string(b))
			}
			r.blobs = append(r.blobs, b)
			r.attachments = append(r.attachments, events.ToolAttachment{Kind: "structured", MIME: "application/json", Ref: eventlog.BlobHash(b), Size: len(b)})
		}
	}
	r.text = strings.Join(parts, "\n")
	return r
}

// capped keeps at most max bytes of the result's text and max bytes of
// its kept parts, saying in the text and in truncated what was dropped (a
// dropped part keeps its attachment, without a Ref). max < 0 keeps
// everything.
func (r rendered) capped(max int) rendered {
	if max < 0 {
		return r
	}
	var notes []string
	kept, total, dropped := 0, 0, 0
	var blobs [][]byte
	atts := make([]events.ToolAttachment, len(r.attachments))
	copy(atts, r.attachments)
	bi := 0
	for i := range atts {
		if atts[i].Ref == "" {
			continue
		}
		b := r.blobs[bi]
		bi++
		total += len(b)
		if kept+len(b) > max {
			dropped++
			atts[i].Ref = ""
			continue
		}
		kept += len(b)
		blobs = append(blobs, b)
	}
	r.blobs, r.attachments = blobs, atts
	if dropped > 0 {
		notes = append(notes, fmt.Sprintf("[mcptool: %d binary parts not kept (%d of %d bytes kept): over the %d-byte result cap]", dropped, kept, total, max))
	}
	size := len(r.text)
	if size > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(r.text[cut]) {
			cut--
		}
		notes = append([]string{fmt.Sprintf("[mcptool: result truncated to %d of %d bytes: over the %d-byte result cap]", cut, size, max)}, notes...)
		r.text = r.text[:cut]
	}
	if len(notes) > 0 {
		r.truncated = &events.Truncation{Limit: max, TextBytes: size, KeptText: min(size, len(r.text)), DroppedParts: dropped}
	}
	for _, n := range notes {
		r.text += "\n" + n
	}
	return r
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
