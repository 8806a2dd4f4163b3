package jsbridge

import (
	"encoding/json"
	"syscall/js"

	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/policy"
)

// Structured output: the options responseFormat (OpenAI's response_format,
// {type: 'text' | 'json_object' | 'json_schema', json_schema: {name,
// description, schema, strict}}) and grammar (GBNF), read into an
// policy.ResponseFormat, which policy.Grammars.FormatGrammar compiles. A chat with a
// forced tool call is held to policy.Grammars.ToolGrammar's grammar instead
// (tools_js.go).

// The keys of a responseFormat object, and of its json_schema.
var (
	responseFormatFields = []string{"type", "json_schema", "schema"}
	jsonSchemaFields     = []string{"name", "description", "schema", "strict"}
)

// parseFormat reads the options responseFormat and grammar. The object's
// keys are OpenAI's, and errors name them so: "responseFormat.json_schema.schema".
func (b *Binding) parseFormat(f fields) (policy.ResponseFormat, error) {
	var rf policy.ResponseFormat
	if g, ok := f.value("grammar"); ok {
		if g.Type() != js.TypeString {
			return rf, invalid("grammar", "must be a string (a GBNF grammar), got %s", b.describe(g))
		}
		rf.Grammar = g.String()
	}
	v, ok := f.value("responseFormat")
	if !ok {
		return rf, nil
	}
	rff, err := b.readFields(v, "responseFormat", responseFormatFields)
	if err != nil {
		return rf, err
	}
	typ, _ := rff.value("type")
	switch {
	case typ.Type() != js.TypeString:
		return rf, invalid("responseFormat.type", "must be 'text', 'json_object' or 'json_schema', got %s", b.describe(typ))
	case typ.String() != policy.FormatText && typ.String() != policy.FormatJSONObject && typ.String() != policy.FormatJSONSchema:
		return rf, invalid("responseFormat.type", "must be 'text', 'json_object' or 'json_schema', got %s", b.describe(typ))
	}
	rf.Type = typ.String()
	// llama.cpp's form: json_object with a schema beside the type.
	if schema, ok := rff.value("schema"); ok {
		if rf.Type != policy.FormatJSONObject {
			return rf, invalid("responseFormat.schema", "goes with type 'json_object' (llama.cpp's form); for type 'json_schema', give responseFormat.json_schema.schema")
		}
		if rf.Schema, err = b.schemaJSON(schema, "responseFormat.schema"); err != nil {
			return rf, err
		}
		rf.Type = policy.FormatJSONSchema
	}
	obj, hasSchema := rff.value("json_schema")
	if typ.String() != policy.FormatJSONSchema {
		if hasSchema {
			return rf, invalid("responseFormat.json_schema", "applies to type 'json_schema' only, not %q", typ.String())
		}
		return rf, nil
	}
	if !hasSchema {
		return rf, invalid("responseFormat.json_schema", "is required for type 'json_schema': {name, schema, strict}")
	}
	sf, err := b.readFields(obj, "responseFormat.json_schema", jsonSchemaFields)
	if err != nil {
		return rf, err
	}
	name, _ := sf.value("name")
	if _, err := b.functionName(name, "responseFormat.json_schema.name"); err != nil {
		return rf, err
	}
	if s, ok := sf.value("description"); ok && s.Type() != js.TypeString {
		return rf, invalid("responseFormat.json_schema.description", "must be a string, got %s", b.describe(s))
	}
	if s, ok := sf.value("strict"); ok && s.Type() != js.TypeBoolean {
		return rf, invalid("responseFormat.json_schema.strict", "must be a boolean, got %s", b.describe(s))
	}
	schema, ok := sf.value("schema")
	if !ok {
		return rf, invalid("responseFormat.json_schema.schema", "is required: a JSON schema object")
	}
	if rf.Schema, err = b.schemaJSON(schema, "responseFormat.json_schema.schema"); err != nil {
		return rf, err
	}
	return rf, nil
}

// schemaJSON is a JSON schema given as a JavaScript value (an object, or a
// boolean schema), as JSON text.
func (b *Binding) schemaJSON(v js.Value, field string) (json.RawMessage, error) {
	if v.Type() != js.TypeObject && v.Type() != js.TypeBoolean || b.array.Call("isArray", v).Bool() {
		return nil, invalid(field, "must be a JSON schema (an object), got %s", b.describe(v))
	}
	return b.jsonText(v, field)
}

// jsonText is JSON.stringify(v), or an error naming field when v cannot be
// written as JSON (a cycle, a BigInt, a getter that throws).
func (b *Binding) jsonText(v js.Value, field string) (_ json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = invalid(field, "must be JSON: %s", b.panicMessage(r))
		}
	}()
	s := b.json.Call("stringify", v)
	if s.Type() != js.TypeString {
		return nil, invalid(field, "must be JSON, got %s", b.describe(v))
	}
	return json.RawMessage(s.String()), nil
}

// panicMessage is what a recovered panic says: a thrown JavaScript value as
// String(value) prints it.
func (b *Binding) panicMessage(r any) string {
	if jsErr, ok := r.(js.Error); ok {
		return b.describeThrown(jsErr.Value)
	}
	return "an internal error"
}

// forcedGrammar reports whether the request's text is held to a grammar
// from its first token: a JSON response format, a GBNF grammar, or a
// forced tool call. A chat template that thinks first cannot fit that, so
// thinking is switched off (chat.Options.DisableThinking).
func (r *request) forcedGrammar() bool {
	return r.format.Constrains() || r.forcedToolCall()
}

// grammar compiles the grammar the request's text is held to (nil for
// none): the forced tool call's in format (the chat template's tool
// format), or else the response format's.
func (r *request) grammar(gs *policy.Grammars, format chat.ToolFormat) (engine.Constraint, error) {
	if len(r.chatOpts.Tools) > 0 {
		// Every tool's parameters are checked, whatever the choice.
		g, err := gs.ToolGrammar(format, r.chatOpts.Tools, r.chatOpts.ToolChoice, r.parallel)
		if err != nil || g != nil {
			return g, err
		}
	}
	return gs.FormatGrammar(r.format)
}

// checkGrammar compiles the request's grammar with the model loaded now,
// if any, so that a bad schema or grammar rejects at once rather than when
// the request's turn comes. The turn compiles it again (a cache hit in
// policy.Grammars) with the model it runs on.
func (b *Binding) checkGrammar(r *request) error {
	if !r.forcedGrammar() {
		return nil
	}
	m, _, err := b.currentModel()
	if err != nil {
		return nil // the turn says there is no model
	}
	var format chat.ToolFormat
	if r.method == "chat" {
		t, err := policy.ChatTemplate(m)
		if err != nil {
			return nil // the turn says the template is not supported
		}
		format = t.ToolFormat()
	}
	_, err = r.grammar(b.grammarsOf(m), format)
	return err
}
