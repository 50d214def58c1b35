package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/gorath/rath/approval"
	"github.com/gorath/rath/events"
)

// errNotRecorded is a person's "no" at the end of an interactive answer.
var errNotRecorded = errors.New("the answer was not recorded: nothing was written")

// errInputEnded is the end of the input before an answer was whole.
var errInputEnded = errors.New("the input ended before the answer was whole: nothing was written")

// promptAnswer asks the person at in and out for the answer to the
// question req asks: field by field when its schema is an object of
// strings, numbers, integers and booleans (what an MCP server's form
// asks for), as typed when it is one of those, else as one JSON value.
// Each value is checked against its schema as it is typed, and asked
// again until it passes. The whole answer is shown, exactly as it will
// be recorded, and recorded only on a "y". Everything the question says (its text, field names,
// descriptions, choices) is shown terminal-safe: the model or a server
// wrote it.
func promptAnswer(in *bufio.Reader, out io.Writer, req *events.ApprovalRequested) (json.RawMessage, error) {
	fmt.Fprintf(out, "question %s: %s\n", termSafe(req.ID), termSafe(req.Question))
	var schema *jsonschema.Schema
	if req.Schema != "" {
		schema = new(jsonschema.Schema)
		if err := json.Unmarshal([]byte(req.Schema), schema); err != nil {
			return nil, fmt.Errorf("the question's schema: %w", err)
		}
	}
	var answer json.RawMessage
	var err error
	if fields, ok := formFields(schema); ok {
		answer, err = promptForm(in, out, schema, fields)
	} else if primitive(schema) {
		answer, err = promptValue(in, out, schema)
	} else {
		answer, err = promptJSON(in, out, req.Schema)
	}
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "answer: %s\n", termSafe(string(answer)))
	yes, err := promptLine(in, out, "record this answer? [y/N] ")
	if err != nil {
		return nil, err
	}
	if !isYes(yes) {
		return nil, errNotRecorded
	}
	return answer, nil
}

// primitiveTypes are the JSON types a person types as they are, without
// JSON's quotes.
var primitiveTypes = []string{"string", "integer", "number", "boolean"}

// primitive reports whether s asks for one string, number, integer or
// boolean.
func primitive(s *jsonschema.Schema) bool {
	return s != nil && slices.Contains(primitiveTypes, s.Type)
}

// formFields are the properties of an object schema of primitive fields,
// the required ones first in their order, then the others by name; ok is
// false for any other schema.
func formFields(s *jsonschema.Schema) (fields []string, ok bool) {
	if s == nil || s.Type != "object" || len(s.Properties) == 0 {
		return nil, false
	}
	for name, p := range s.Properties {
		if !primitive(p) {
			return nil, false
		}
		if !slices.Contains(s.Required, name) {
			fields = append(fields, name)
		}
	}
	slices.Sort(fields)
	var required []string
	for _, name := range s.Required {
		if _, ok := s.Properties[name]; ok && !slices.Contains(required, name) {
			required = append(required, name)
		}
	}
	return append(required, fields...), true
}

func promptForm(in *bufio.Reader, out io.Writer, s *jsonschema.Schema, fields []string) (json.RawMessage, error) {
	answer := map[string]any{}
	for _, name := range fields {
		required := slices.Contains(s.Required, name)
		v, err := promptField(in, out, name, s.Properties[name], required)
		if err != nil {
			return nil, err
		}
		if v != nil {
			answer[name] = v
		}
	}
	return canonicalAnswer(answer)
}

// promptValue asks for an answer that is one primitive value.
func promptValue(in *bufio.Reader, out io.Writer, s *jsonschema.Schema) (json.RawMessage, error) {
	v, err := promptField(in, out, "answer", s, true)
	if err != nil {
		return nil, err
	}
	return canonicalAnswer(v)
}

// promptField asks for one primitive value of schema p, again until it
// matches; nil when the field is not required and left empty.
func promptField(in *bufio.Reader, out io.Writer, name string, p *jsonschema.Schema, required bool) (any, error) {
	res, err := p.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("the question's schema, field %s: %w", termSafe(name), err)
	}
	label := fieldLabel(name, p, required)
	for {
		line, err := promptLine(in, out, label)
		if err != nil {
			return nil, err
		}
		if line == "" && !required {
			return nil, nil
		}
		v, err := fieldValue(p.Type, line)
		if err == nil {
			err = res.Validate(v)
		}
		if err != nil {
			fmt.Fprintf(out, "  not valid: %s\n", termSafe(strings.TrimPrefix(err.Error(), "validating root: ")))
			continue
		}
		return v, nil
	}
}

func canonicalAnswer(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return events.CanonicalizeJSON(b)
}

// fieldLabel is the prompt of one field: its name, type, whether it is
// required, its choices and its description.
func fieldLabel(name string, p *jsonschema.Schema, required bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s", termSafe(name), p.Type)
	if required {
		b.WriteString(", required")
	} else {
		b.WriteString(", Enter to leave out")
	}
	if len(p.Enum) > 0 {
		choices := make([]string, len(p.Enum))
		for i, e := range p.Enum {
			choices[i] = termSafe(fmt.Sprint(e))
		}
		fmt.Fprintf(&b, ", one of %s", strings.Join(choices, " | "))
	}
	if p.Type == "boolean" {
		b.WriteString(", y or n")
	}
	b.WriteString(")")
	if d := strings.TrimSpace(p.Title + " " + p.Description); d != "" {
		fmt.Fprintf(&b, " %s", termSafe(d))
	}
	b.WriteString(": ")
	return b.String()
}

// fieldValue converts what was typed to a value of JSON type typ.
func fieldValue(typ, line string) (any, error) {
	switch typ {
	case "integer":
		n, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a whole number", line)
		}
		// As json.Unmarshal gives numbers, which the schema validates.
		return float64(n), nil
	case "number":
		f, err := strconv.ParseFloat(line, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", line)
		}
		return f, nil
	case "boolean":
		switch strings.ToLower(line) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not y or n", line)
	}
	return line, nil
}

// promptJSON asks for the whole answer as JSON, again until it matches
// the schema.
func promptJSON(in *bufio.Reader, out io.Writer, schema string) (json.RawMessage, error) {
	if schema != "" {
		fmt.Fprintf(out, "the answer's JSON Schema: %s\n", termSafe(schema))
	}
	for {
		line, err := promptLine(in, out, "answer (JSON, on one line): ")
		if err != nil {
			return nil, err
		}
		canon, err := approval.CheckAnswer(schema, json.RawMessage(line))
		if err != nil {
			fmt.Fprintf(out, "  not valid: %s\n", termSafe(err.Error()))
			continue
		}
		return json.RawMessage(canon), nil
	}
}

// promptLine writes label and reads one line, without its end and the
// spaces around it.
func promptLine(in *bufio.Reader, out io.Writer, label string) (string, error) {
	fmt.Fprint(out, label)
	line, err := in.ReadString('\n')
	if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
		fmt.Fprintln(out)
		if errors.Is(err, io.EOF) {
			return "", errInputEnded
		}
		return "", err
	}
	return strings.TrimSpace(line), nil
}

func isYes(s string) bool {
	s = strings.ToLower(s)
	return s == "y" || s == "yes"
}
