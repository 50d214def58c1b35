// Package secret knows the values rath must never write down: provider
// keys, the hash chain's HMAC key, and the environment variables and
// config entries that hold credentials. Its [Redactor] replaces every
// occurrence of them, raw or JSON-escaped, with a marker naming the
// secret ("[redacted:OPENAI_API_KEY]"), never its value.
//
// The event store calls the Redactor on every payload and blob before it
// is hashed and written (eventlog.Options.Redactor), so tool output, model
// text, MCP results and error text are covered by one choke point, and
// the log, its exports and dossiers hold only markers.
//
// Redaction matches exact bytes. A secret the model transforms (base64,
// reversed, split across two tool calls) is not recognised; the sandbox,
// not the redactor, is what keeps it from reading secrets in the first
// place. Values shorter than [MinLen] are not redacted: replacing every
// "1234" in a log would destroy it without protecting anything.
package secret
