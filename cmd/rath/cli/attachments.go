package cli

import (
	"context"
	"fmt"
	"io"
	"mime"
	"os"
	"path/filepath"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
)

// attachmentView is one part of a tool result kept beside its text (an
// MCP tool's image, say), as `rath show` lists it.
type attachmentView struct {
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	events.ToolAttachment
	// File is where --attachments wrote its bytes.
	File string `json:"file,omitempty"`
}

// sessionAttachments lists the attachments of the session's tool results
// recorded up to seq at (0: all), writing their bytes into dir when set.
func sessionAttachments(ctx context.Context, rt *rath.Runtime, id string, at int64, dir string) ([]attachmentView, error) {
	evs, err := rt.Store().ReadStream(ctx, id, 1)
	if err != nil {
		return nil, err
	}
	var out []attachmentView
	for _, ev := range evs {
		if ev.Type != events.TypeToolReturned || ev.Redacted || at > 0 && ev.Seq > at {
			continue // a redacted result's attachments went with it
		}
		p, err := ev.Decode()
		if err != nil {
			return nil, err
		}
		tr, ok := p.(*events.ToolReturned)
		if !ok {
			continue
		}
		for i, a := range tr.Attachments {
			v := attachmentView{CallID: tr.CallID, Tool: tr.Tool, ToolAttachment: a}
			if dir != "" && a.Ref != "" {
				b, err := rt.Store().GetBlob(ctx, a.Ref)
				if err != nil {
					return nil, fmt.Errorf("attachment %d of call %s: %w", i, tr.CallID, err)
				}
				// The name is ours (call ids are the model's: kept out of the path).
				v.File = filepath.Join(dir, fmt.Sprintf("seq%d-%d%s", ev.Seq, i+1, extension(a.MIME)))
				if err := os.WriteFile(v.File, b, 0o644); err != nil {
					return nil, err
				}
			}
			out = append(out, v)
		}
	}
	return out, nil
}

func extension(mimeType string) string {
	switch mimeType {
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	case "application/json":
		return ".json"
	}
	if exts, _ := mime.ExtensionsByType(mimeType); len(exts) > 0 {
		return exts[0]
	}
	return ".bin"
}

func printAttachments(w io.Writer, atts []attachmentView) {
	if len(atts) == 0 {
		return
	}
	fmt.Fprintf(w, "\nattachments\n")
	for _, a := range atts {
		fmt.Fprintf(w, "    call %s %s: %s %s", a.CallID, a.Tool, a.Kind, a.MIME)
		if a.URI != "" {
			fmt.Fprintf(w, " %s", a.URI)
		}
		if a.Size > 0 {
			fmt.Fprintf(w, " %d bytes", a.Size)
		}
		switch {
		case a.File != "":
			fmt.Fprintf(w, " -> %s", a.File)
		case a.Ref != "":
			fmt.Fprintf(w, " (blob %s)", a.Ref)
		}
		fmt.Fprintln(w)
	}
}
