package openai

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/wasmlm/wasmlm/policy"
)

// Structured output: OpenAI's response_format and llama.cpp's grammar, on
// both completion endpoints. Their shapes are checked here, strictly (a
// wrong type, an unknown key, an unknown format type, a json_schema without
// its name or schema: 400 naming the field, before the request waits for a
// slot); what they mean is policy's (policy.Grammars.FormatGrammar), whose
// errors name the field too (an unsupported schema keyword, a GBNF syntax
// error).

// Structured output: OpenAI's response_format and llama.cpp's grammar, on
// both completion endpoints. Their shapes are checked here, strictly (a
// wrong type, an unknown key, an unknown format type, a json_schema without
// its name or schema: 400 naming the field, before the request waits for a
// slot); what they mean is policy's (policy.Grammars.FormatGrammar), whose
// errors name the field too (an unsupported schema keyword, a GBNF syntax
// error).

// validName is OpenAI's rule for response_format.json_schema.name and a
// function's name: 1 to 64 letters, digits, '_' and '-'. (Not a regexp:
// package regexp would add 120 KB, gzipped, to the edge worker.)
func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c == '_' || c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// responseFormat reads response_format and grammar into the engine's
// ResponseFormat. Omitted or null, both mean free text.
//
// response_format is {"type": "text" | "json_object" | "json_schema"};
// json_schema takes "json_schema": {"name", "description", "schema",
// "strict"}. As llama.cpp's server does, json_object also takes a
// "schema" beside the type (then the text is a JSON value valid for it).
func (r *SamplingRequest) responseFormat() (policy.ResponseFormat, *Error) {
	var f policy.ResponseFormat
	if g := bytes.TrimSpace(r.Grammar); !IsNull(g) {
		if g[0] != '"' {
			return f, BadRequest("grammar", "invalid_type", "grammar must be a string (GBNF), got %s", jsonValue(literalKind(g)))
		}
		if err := json.Unmarshal(g, &f.Grammar); err != nil {
			return f, BadRequest("grammar", "invalid_json", "grammar is not a valid JSON string")
		}
	}
	raw := bytes.TrimSpace(r.ResponseFormat)
	if IsNull(raw) {
		return f, nil
	}
	obj, e := jsonObjectOf(raw, "response_format")
	if e != nil {
		return f, e
	}
	if e := onlyKeys(obj, "response_format", "type", "json_schema", "schema"); e != nil {
		return f, e
	}
	typ, e := stringField(obj, "response_format", "type", true)
	if e != nil {
		return f, e
	}
	switch typ {
	case policy.FormatText, policy.FormatJSONObject, policy.FormatJSONSchema:
	default:
		return f, BadRequest("response_format.type", "invalid_value",
			"response_format.type must be \"text\", \"json_object\" or \"json_schema\", got %q", typ)
	}
	f.Type = typ
	if schema, ok := obj["schema"]; ok && !IsNull(schema) {
		if typ != policy.FormatJSONObject {
			return f, BadRequest("response_format.schema", "invalid_value",
				"response_format.schema goes with type json_object (llama.cpp's form); for type json_schema, give response_format.json_schema.schema")
		}
		if e := schemaObject(schema, "response_format.schema"); e != nil {
			return f, e
		}
		f.Type, f.Schema = policy.FormatJSONSchema, json.RawMessage(bytes.TrimSpace(schema))
	}
	js, given := obj["json_schema"]
	given = given && !IsNull(js)
	switch {
	case typ != policy.FormatJSONSchema && given:
		return f, BadRequest("response_format.json_schema", "invalid_value",
			"response_format.json_schema goes with type json_schema, not %q", typ)
	case typ == policy.FormatJSONSchema && !given:
		return f, BadRequest("response_format.json_schema", "missing_required_parameter",
			"response_format.json_schema is required for type json_schema")
	case !given:
		return f, nil
	}
	const p = "response_format.json_schema"
	spec, e := jsonObjectOf(js, p)
	if e != nil {
		return f, e
	}
	if e := onlyKeys(spec, p, "name", "description", "schema", "strict"); e != nil {
		return f, e
	}
	name, e := stringField(spec, p, "name", true)
	if e != nil {
		return f, e
	}
	if !validName(name) {
		return f, BadRequest(p+".name", "invalid_value",
			"%s.name %q must be 1 to 64 letters, digits, '_' or '-'", p, name)
	}
	if _, e := stringField(spec, p, "description", false); e != nil {
		return f, e
	}
	if _, e := boolField(spec, p, "strict"); e != nil {
		return f, e
	}
	schema, ok := spec["schema"]
	if !ok || IsNull(schema) {
		return f, BadRequest(p+".schema", "missing_required_parameter", "%s.schema is required: the JSON schema the reply must match", p)
	}
	if e := schemaObject(schema, p+".schema"); e != nil {
		return f, e
	}
	f.Schema = json.RawMessage(bytes.TrimSpace(schema))
	return f, nil
}

// jsonObjectOf reads raw, the value of param, as a JSON object.
func jsonObjectOf(raw []byte, param string) (map[string]json.RawMessage, *Error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, BadRequest(param, "missing_required_parameter", "%s is required", param)
	}
	if raw[0] != '{' {
		return nil, BadRequest(param, "invalid_type", "%s must be an object, got %s", param, jsonValue(literalKind(raw)))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, BadRequest(param, "invalid_json", "%s is not a valid object", param)
	}
	return obj, nil
}

// onlyKeys refuses a key of the object param that is not among keys.
func onlyKeys(obj map[string]json.RawMessage, param string, keys ...string) *Error {
	for k := range obj {
		if !slices.Contains(keys, k) {
			return BadRequest(param+"."+k, "unknown_parameter", "%s: unknown parameter %q", param, k)
		}
	}
	return nil
}

// stringField reads obj[key] (of the object param) as a string; a missing
// or null one is "" and, when required, an error.
func stringField(obj map[string]json.RawMessage, param, key string, required bool) (string, *Error) {
	name := param + "." + key
	raw := bytes.TrimSpace(obj[key])
	if IsNull(raw) {
		if required {
			return "", BadRequest(name, "missing_required_parameter", "%s is required", name)
		}
		return "", nil
	}
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", BadRequest(name, "invalid_type", "%s must be a string, got %s", name, jsonValue(literalKind(raw)))
	}
	if required && s == "" {
		return "", BadRequest(name, "invalid_value", "%s must not be empty", name)
	}
	return s, nil
}

// boolField reads obj[key] as a boolean; missing or null is nil.
func boolField(obj map[string]json.RawMessage, param, key string) (*bool, *Error) {
	raw := bytes.TrimSpace(obj[key])
	if IsNull(raw) {
		return nil, nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		name := param + "." + key
		return nil, BadRequest(name, "invalid_type", "%s must be a boolean, got %s", name, jsonValue(literalKind(raw)))
	}
	return &b, nil
}

// schemaObject checks that a JSON schema given as param is an object.
func schemaObject(raw []byte, param string) *Error {
	_, e := jsonObjectOf(raw, param)
	return e
}
