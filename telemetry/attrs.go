package telemetry

import "go.opentelemetry.io/otel/attribute"

// Attribute keys. The gen_ai.* names are those of the OpenTelemetry GenAI
// semantic conventions (development status); rath.* are rath's own.
const (
	keyOperation      = attribute.Key("gen_ai.operation.name")
	keyProvider       = attribute.Key("gen_ai.provider.name")
	keyRequestModel   = attribute.Key("gen_ai.request.model")
	keyResponseModel  = attribute.Key("gen_ai.response.model")
	keyFinishReasons  = attribute.Key("gen_ai.response.finish_reasons")
	keyInputTokens    = attribute.Key("gen_ai.usage.input_tokens")
	keyOutputTokens   = attribute.Key("gen_ai.usage.output_tokens")
	keyAgentName      = attribute.Key("gen_ai.agent.name")
	keyToolName       = attribute.Key("gen_ai.tool.name")
	keyToolCallID     = attribute.Key("gen_ai.tool.call.id")
	keyToolType       = attribute.Key("gen_ai.tool.type")
	keyToolArguments  = attribute.Key("gen_ai.tool.call.arguments")
	keyToolResult     = attribute.Key("gen_ai.tool.call.result")
	keyInputMessages  = attribute.Key("gen_ai.input.messages")
	keyOutputMessages = attribute.Key("gen_ai.output.messages")
	keyTokenType      = attribute.Key("gen_ai.token.type")
	keyTemperature    = attribute.Key("gen_ai.request.temperature")
	keyTopP           = attribute.Key("gen_ai.request.top_p")
	keyMaxTokens      = attribute.Key("gen_ai.request.max_tokens")
	keySeed           = attribute.Key("gen_ai.request.seed")
	keyStopSequences  = attribute.Key("gen_ai.request.stop_sequences")
	keyErrorType      = attribute.Key("error.type")
	// A rath session is the conversation a model call continues.
	keyConversation = attribute.Key("gen_ai.conversation.id")

	keyRunID          = attribute.Key("rath.run.id")
	keyRunStatus      = attribute.Key("rath.run.status")
	keyParentRun      = attribute.Key("rath.run.parent")
	keyCodeVersion    = attribute.Key("rath.code.version")
	keySessionID      = attribute.Key("rath.session.id")
	keyOutputSession  = attribute.Key("rath.output_session.id")
	keySeq            = attribute.Key("rath.event.seq")
	keyEndSeq         = attribute.Key("rath.event.end_seq")
	keyWorkflowPath   = attribute.Key("rath.workflow.path")
	keyWorkflowType   = attribute.Key("rath.workflow.type")
	keyBackend        = attribute.Key("rath.sandbox.backend")
	keySandboxID      = attribute.Key("rath.sandbox.id")
	keyAttempts       = attribute.Key("rath.provider.attempts")
	keyAttempt        = attribute.Key("rath.provider.attempt")
	keyStreamed       = attribute.Key("rath.provider.streamed")
	keyProviderLabel  = attribute.Key("rath.provider")
	keyErrorMessage   = attribute.Key("rath.error.message")
	keyWillRetry      = attribute.Key("rath.provider.will_retry")
	keyExitCode       = attribute.Key("rath.tool.exit_code")
	keyOutputSize     = attribute.Key("rath.tool.output_size")
	keyFilesChanged   = attribute.Key("rath.tool.files_changed")
	keyToolDuration   = attribute.Key("rath.tool.duration_ms")
	keyLinkKind       = attribute.Key("rath.link.kind")
	keyLinkSession    = attribute.Key("rath.link.session.id")
	keyIncomplete     = attribute.Key("rath.incomplete")
	keyPartial        = attribute.Key("rath.run.partial")
	keyRounds         = attribute.Key("rath.agent.rounds")
	keySelectorChosen = attribute.Key("rath.selector.chosen")
	keyCandidates     = attribute.Key("rath.selector.candidates")
	keyReason         = attribute.Key("rath.selector.reason")
)

// Operation names (gen_ai.operation.name values).
const (
	opWorkflow = "invoke_workflow"
	opAgent    = "invoke_agent"
	opChat     = "chat"
	opTool     = "execute_tool"
)

// errOther is error.type when nothing more specific is known, as the
// conventions ask.
const errOther = "_OTHER"
