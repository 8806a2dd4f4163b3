package jsbridge

import (
	"encoding/json"
	"strings"
	"syscall/js"

	"github.com/wasmlm/wasmlm/policy"
)

// Structured output for generate and stream: the options responseFormat
// (OpenAI's response_format, {type: 'text' | 'json_object' | 'json_schema',
// json_schema: {name, description, schema, strict}}) and grammar (GBNF),
// read into a policy.ResponseFormat, which policy.Grammars.FormatGrammar
// compiles. (A chat's are its request's, which package openai reads.)

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
		if typeOf(g) != js.TypeString {
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
	case typeOf(typ) != js.TypeString:
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
	if s, ok := sf.value("description"); ok && typeOf(s) != js.TypeString {
		return rf, invalid("responseFormat.json_schema.description", "must be a string, got %s", b.describe(s))
	}
	if s, ok := sf.value("strict"); ok && typeOf(s) != js.TypeBoolean {
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
	if typeOf(v) != js.TypeObject && typeOf(v) != js.TypeBoolean || b.array.Call("isArray", v).Bool() {
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
	if typeOf(s) != js.TypeString {
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

// checkGrammar compiles the request's grammar with the model loaded now,
// if any, so that a bad schema or grammar rejects at once rather than when
// the request's turn comes. The turn compiles it again (a cache hit in
// policy.Grammars) with the model it runs on.
func (b *Binding) checkGrammar(r *request) error {
	if !r.format.Constrains() {
		return nil
	}
	m, _, err := b.currentModel()
	if err != nil {
		return nil // the turn says there is no model
	}
	_, err = b.grammarsOf(m).FormatGrammar(r.format)
	return err
}

// functionName checks a schema's name as OpenAI's API does: 1 to 64
// letters, digits, '_' or '-'.
func (b *Binding) functionName(v js.Value, field string) (string, error) {
	if typeOf(v) != js.TypeString || v.String() == "" {
		return "", invalid(field, "must be a non-empty string, got %s", b.describe(v))
	}
	name := v.String()
	if len(name) > 64 || strings.IndexFunc(name, func(r rune) bool {
		return !(r == '_' || r == '-' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z')
	}) >= 0 {
		return "", invalid(field, "must be 1 to 64 letters, digits, '_' or '-', got %s", b.describe(v))
	}
	return name, nil
}
