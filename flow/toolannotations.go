package flow

// ToolAnnotations are hints a tool gives about its effects, as MCP tool
// annotations do. They are hints from whoever wrote the tool, which may
// be an untrusted server: a policy may use them to relax a check (retry,
// run in parallel, skip an approval), never as a guarantee.
type ToolAnnotations struct {
	// Title is a human-readable name.
	Title string `json:"title,omitempty"`
	// ReadOnly: the tool does not change its environment.
	ReadOnly bool `json:"read_only,omitempty"`
	// Destructive: the tool may delete or overwrite (MCP's default is
	// true when unset: a nil pointer means unknown).
	Destructive *bool `json:"destructive,omitempty"`
	// Idempotent: calling it again with the same arguments has no further
	// effect.
	Idempotent bool `json:"idempotent,omitempty"`
	// OpenWorld: the tool reaches outside entities (the web); nil means
	// unknown (MCP's default is true).
	OpenWorld *bool `json:"open_world,omitempty"`
}

// AnnotatedTool is a Tool that describes its effects.
type AnnotatedTool interface {
	Annotations() ToolAnnotations
}

// AnnotationsOf returns t's annotations, or the zero value (nothing
// known) for a tool without them.
func AnnotationsOf(t Tool) ToolAnnotations {
	if a, ok := t.(AnnotatedTool); ok {
		return a.Annotations()
	}
	return ToolAnnotations{}
}
