package mcptool

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gorath/rath/events"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// render turns a tool result into the text the model reads and the blobs
// kept as evidence: text parts as they are, binary parts (images, audio,
// binary resources) described by type, size and hash and kept as blobs.
// A result with no content shows its structured content as JSON.
func render(res *mcp.CallToolResult) (string, [][]byte) {
	var (
		parts []string
		blobs [][]byte
	)
	binary := func(kind, mime string, data []byte) string {
		blobs = append(blobs, data)
		return fmt.Sprintf("[%s %s, %d bytes, sha256 %s]", kind, mime, len(data), events.BlobHash(data))
	}
	for _, c := range res.Content {
		switch v := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, v.Text)
		case *mcp.ImageContent:
			parts = append(parts, binary("image", v.MIMEType, v.Data))
		case *mcp.AudioContent:
			parts = append(parts, binary("audio", v.MIMEType, v.Data))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link %s: %s]", v.URI, firstOf(v.Title, v.Name, v.Description)))
		case *mcp.EmbeddedResource:
			r := v.Resource
			switch {
			case r == nil:
				parts = append(parts, "[empty resource]")
			case r.Blob != nil:
				parts = append(parts, fmt.Sprintf("[resource %s] ", r.URI)+binary("blob", r.MIMEType, r.Blob))
			default:
				parts = append(parts, fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text))
			}
		default:
			parts = append(parts, fmt.Sprintf("[%T content]", c))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n"), blobs
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
