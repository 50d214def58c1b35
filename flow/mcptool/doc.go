// Package mcptool owns rath's MCP client side: it connects to Model Context
// Protocol servers over stdio, streamable HTTP or the older HTTP+SSE
// transport with the official SDK (github.com/modelcontextprotocol/go-sdk)
// and offers their tools to agents as [flow.Tool] values.
//
// # Connections
//
// A [Manager] keeps one long-lived connection per server, opened by
// [Manager.Connect] (an *exec.Cmd), [Manager.ConnectServer] (a [Server]
// description), [Manager.ConnectConfig] (the "mcp_servers" of rath's config
// file) or [Manager.ConnectTransport] (any SDK transport, such as an
// in-memory one), and closed by [Manager.Close]. Every tool call of every
// agent goes through that one connection; the SDK session is safe for
// concurrent calls. The runtime is meant to own one Manager and close it
// when it closes.
//
// The config file names servers as most MCP clients do (the full format
// is in docs/CONFIG.md; [ParseFlag] reads the CLI's --mcp NAME=… form):
//
//	{"mcp_servers": {"everything": {"command": "node", "args": ["dist/index.js", "stdio"],
//	                                "env": {"LOG_LEVEL": "warn"}, "cwd": "/opt/everything"},
//	                 "remote": {"url": "https://mcp.example.com/mcp", "call_timeout": "30s",
//	                            "headers": {"Authorization": "Bearer ${REMOTE_TOKEN}"}}}}
//
// Header values read from the environment, and those of credential
// headers, are secrets ([Server.Secrets], [ConfigSecrets]): a runtime
// redacts them from the log.
//
// # Reconnects
//
// A server found gone before a call is connected again (a stdio server is
// started again) and the call goes on: nothing was sent. A call whose
// connection breaks is retried once on a new connection only when it
// cannot run twice: the request was never delivered (the connection was
// refused, or a restarted HTTP server no longer knew the session, which it
// checks before running anything), or the server annotates the tool
// read-only or idempotent. Other calls fail with KindServerGone, and the
// next call reconnects. [Manager.Ping] is a health check that reconnects
// the same way. A streamable HTTP call in flight when its server restarts
// ends at its timeout: the SDK does not report a response stream cut
// before its first event.
//
// A server process does not inherit the whole environment of rath: it gets
// HOME, LOGNAME, PATH, SHELL, TERM, USER, LANG and TMPDIR when set (the set
// the MCP reference clients pass), plus its "env" entries, so API keys in
// rath's environment reach only the servers configured to get them.
//
// # Tools
//
// [Manager.Tools] lists a server's tools and wraps each one: its name, its
// description, its input schema as the tool's JSON Schema (arguments are
// validated against it before the call) and a Call that forwards to the
// server. Tool names are prefixed with the server's name and two
// underscores ("everything__echo"): tools of two servers, or an MCP tool
// and a built-in one, would otherwise collide, and model APIs accept only
// [A-Za-z0-9_-]{1,64}, so other characters become "_" and longer names are
// shortened with a hash suffix. [Options.BareNames] keeps the server's
// names (sanitized the same way) for prompts written for them.
//
// # Errors
//
// A failed call is a [flow.ToolError], never a panic or a lost agent run:
// a JSON-RPC error from the server has kind [KindError], a result the server
// marks isError has kind [KindToolError] (its text is in the message, so
// the model can correct itself), and a server that exited or closed the
// connection has kind [KindServerGone], with the end of its stderr. Every
// result names the server as its evidence: Backend "mcp", SandboxID
// "mcp:<server>". Images and audio a tool returns are kept as blobs with the
// evidence, listed as the result's Attachments (with resource links and
// structured content) and described by size and hash in the text; a result
// over the size cap is cut, and its Truncated says so.
//
// A tool's MCP annotations are its [flow.ToolAnnotations]; [SpecOf] gives
// what a record needs to offer the same tool again and [Recorded] rebuilds
// tools from it for a replay, with no server.
//
// # What it does not own
//
// The agent loop (package flow), the config file format (flow.ConfigFile,
// whose MCPServers field this package reads) and sandboxes: MCP servers
// run as ordinary host processes, not inside a session's sandbox. It
// imports flow, session and events, the MCP SDK and jsonschema-go.
package mcptool
