package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/grammar"
	"github.com/wasmlm/wasmlm/grammar/jsonschema"
)

// ResponseFormat is what a request asks its text to be: OpenAI's
// response_format ({type: "text" | "json_object" | "json_schema"}), or a
// GBNF grammar (llama.cpp's and wasmlm's extension). Hosts fill it from
// their requests; Grammars.FormatGrammar compiles it.
type ResponseFormat struct {
	// Type is "" or "text" (free text), "json_object" (any JSON object) or
	// "json_schema" (a JSON text valid for Schema).
	Type string
	// Schema is json_schema's schema (the subset of JSON Schema that
	// llama.cpp's json_schema_to_grammar supports: see grammar/jsonschema).
	Schema json.RawMessage
	// Grammar is GBNF source; it excludes a JSON Type.
	Grammar string
}

// The response format types.
const (
	FormatText       = "text"
	FormatJSONObject = "json_object"
	FormatJSONSchema = "json_schema"
)

// Constrains reports whether f holds the text to a grammar.
func (f ResponseFormat) Constrains() bool {
	return f.Grammar != "" || (f.Type != "" && f.Type != FormatText)
}

// optionError is an *engine.OptionError for field whose problem is format, args.
func optionError(field, format string, args ...any) error {
	return &engine.OptionError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// FormatGrammar compiles f for engine.GenerateOptions.Constraint: nil for
// free text. Errors are *engine.OptionError naming the request field at
// fault ("response_format", "response_format.json_schema.schema",
// "grammar") and the construct (an unsupported schema keyword, a GBNF
// syntax error).
func (gs *Grammars) FormatGrammar(f ResponseFormat) (engine.Constraint, error) {
	return gs.ChatFormatGrammar(f, chat.Template{})
}

// ChatFormatGrammar is FormatGrammar for a chat reply of tmpl: a JSON
// format holds the reply's content, wherever the template's reply puts it
// (chat.Template.ContentGrammar: gpt-oss's harmony reply may reason in the
// analysis channel first, and its final channel's message is the JSON). A
// GBNF grammar holds the reply's text as it is, as llama.cpp applies one.
func (gs *Grammars) ChatFormatGrammar(f ResponseFormat, tmpl chat.Template) (engine.Constraint, error) {
	switch {
	case f.Grammar != "" && f.Type != "" && f.Type != FormatText:
		return nil, optionError("grammar", "cannot be combined with response_format %q", f.Type)
	case f.Grammar != "":
		return gs.Compile(f.Grammar)
	}
	switch f.Type {
	case "", FormatText:
		return nil, nil
	case FormatJSONObject:
		if tmpl.WrapsContent() {
			return gs.schemaGrammar("response_format", json.RawMessage(`{"type": "object"}`), tmpl)
		}
		g, err := gs.Compile(jsonschema.JSONObject())
		if err != nil {
			return nil, errors.Join(errors.New("policy: the json_object grammar does not parse"), err)
		}
		return g, nil
	case FormatJSONSchema:
		if len(f.Schema) == 0 {
			return nil, optionError("response_format.json_schema.schema", "is required for type json_schema")
		}
		return gs.schemaGrammar("response_format.json_schema.schema", f.Schema, tmpl)
	}
	return nil, optionError("response_format.type", "must be text, json_object or json_schema, got %q", f.Type)
}

// schemaGrammar converts a JSON schema, the request's field, to GBNF for
// the content of tmpl's replies, and compiles it.
func (gs *Grammars) schemaGrammar(field string, schema json.RawMessage, tmpl chat.Template) (engine.Constraint, error) {
	c := jsonschema.NewConverter()
	src := ""
	if tmpl.WrapsContent() {
		rule, err := c.Add("content", schema)
		if err != nil {
			return nil, schemaError(field, err)
		}
		src = tmpl.ContentGrammar(c, rule)
	} else {
		if _, err := c.Add("", schema); err != nil {
			return nil, schemaError(field, err)
		}
		src = c.GBNF()
	}
	g, err := gs.Compile(src)
	if err != nil {
		if e := ruleError(field, c, err); e != nil {
			return nil, e
		}
		// Any other failure of a converted schema is our bug, not the request's.
		return nil, errors.Join(errors.New("policy: the grammar of a JSON schema does not parse"), err)
	}
	return g, nil
}

// schemaError is the *engine.OptionError of a schema the converter
// refused, given as field: it names the subschema's field and keyword
// (response_format.json_schema.schema.properties.k.minLength) where the
// converter says which.
func schemaError(field string, err error) error {
	var se *jsonschema.Error
	if errors.As(err, &se) {
		at := field + pointerField(se.Pointer)
		if se.Keyword != "" {
			at += "." + se.Keyword
		}
		return &engine.OptionError{Field: at, Problem: "cannot be used: " + se.Msg, Err: err}
	}
	return &engine.OptionError{Field: field, Problem: "cannot be used: " + err.Error(), Err: err}
}

// ruleError is the *engine.OptionError of a schema whose grammar Compile
// refused for one of its rules (grammar.RuleError: it can never end, or
// it holds more parses than the matcher does), naming the subschema the
// rule was made for; nil for another error.
func ruleError(field string, c *jsonschema.Converter, err error) error {
	var re *grammar.RuleError
	if !errors.As(err, &re) {
		return nil
	}
	at, keyword := field, ""
	for i := len(re.Path) - 1; i >= 0; i-- {
		if ptr, ok := c.Pointer(re.Path[i]); ok {
			at += pointerField(ptr)
			keyword = c.Keyword(re.Path[i])
			break
		}
	}
	// The grammar's rules are the converter's, not the user's: their names
	// (k_26, ref-k) would mean nothing to whoever wrote the schema.
	if errors.Is(err, grammar.ErrEndless) {
		problem := "cannot end: no finite JSON text is valid for it (it requires itself with no way out)"
		return &engine.OptionError{Field: at, Problem: problem, Err: err}
	}
	if keyword != "" {
		at += "." + keyword // the keyword whose alternatives are too many
	}
	problem := "has more alternatives than the grammar matcher holds at once: the grammar made for it " + re.Problem
	return &engine.OptionError{Field: at, Problem: problem, Err: err}
}

// pointerField is a JSON pointer into a schema as the path of a request's
// field: "/properties/k" is ".properties.k", "/anyOf/2" is ".anyOf[2]".
func pointerField(ptr string) string {
	if ptr == "" {
		return ""
	}
	var b strings.Builder
	tokens := strings.Split(ptr[1:], "/")
	for i, tok := range tokens {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		parent := ""
		if i > 0 {
			parent = tokens[i-1]
		}
		if _, err := strconv.Atoi(tok); err == nil && slices.Contains([]string{"anyOf", "oneOf", "allOf", "prefixItems", "items", "enum"}, parent) {
			b.WriteString("[" + tok + "]")
			continue
		}
		b.WriteString("." + tok)
	}
	return b.String()
}

// ToolGrammar compiles the grammar that forces a tool call in format (the
// prompt's ChatPrompt.ToolFormat): for choice ToolRequired, a call of one
// of tools (several when parallel, at most chat.MaxParallelCalls), for
// ToolFunction, of that function; nil for the other choices, where the
// model may answer in text. The call's arguments are held to each tool's
// parameter schema. Every tool's parameters are checked whatever the
// choice, so a schema it cannot hold arguments to is refused as a bad
// request (an *engine.OptionError naming tools[i].function.parameters),
// not only when a call is forced. The grammar is Unbudgeted: a call the
// token limit cuts is cut, never closed early with arguments the model
// did not write.
func (gs *Grammars) ToolGrammar(format chat.ToolFormat, tools []chat.Tool, choice chat.ToolChoice, parallel bool) (engine.Constraint, error) {
	for i, t := range tools {
		if err := chat.CheckToolParameters(t); err != nil {
			return nil, schemaError(fmt.Sprintf("tools[%d].function.parameters", i), err)
		}
	}
	if choice.Mode != chat.ToolRequired && choice.Mode != chat.ToolFunction {
		return nil, nil
	}
	src, err := chat.ToolCallGrammar(format, tools, choice, parallel)
	if err != nil {
		return nil, &engine.OptionError{Field: "tools", Problem: err.Error(), Err: err}
	}
	g, err := gs.Compile(src)
	if err != nil {
		// A tool's parameters whose grammar cannot end (or is too wide) is
		// the request's fault: find which, by its grammar alone.
		for i, t := range tools {
			if len(t.Parameters) == 0 {
				continue
			}
			c := jsonschema.NewConverter()
			if _, cerr := c.Add("", t.Parameters); cerr == nil {
				if _, perr := grammar.Parse(c.GBNF()); perr != nil {
					if e := ruleError(fmt.Sprintf("tools[%d].function.parameters", i), c, perr); e != nil {
						return nil, e
					}
				}
			}
		}
		return nil, errors.Join(errors.New("policy: the grammar of a tool call does not parse"), err)
	}
	return Unbudgeted(g), nil
}
