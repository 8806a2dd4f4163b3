package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/wasmlm/wasmlm/grammar/jsonschema"
)

// A forced tool call (tool_choice "required" or a named function) is
// sampled under a grammar whose language is exactly the format's call
// syntax: the name one of the allowed tools', the arguments matching that
// tool's parameters schema, so the arguments always validate. The JSON
// schemas become GBNF rules through grammar/jsonschema's Converter; the
// call syntax around them is written here, one layout per format (the one
// its template shows the model), which ParseToolCalls reads back.

// schemaConverter is the part of grammar/jsonschema's Converter that a tool
// grammar needs: a rule for a JSON schema's values, a hand-written rule,
// and the GBNF text of all the rules (the caller adds "root").
type schemaConverter interface {
	Add(name string, schema []byte) (rule string, err error)
	Rule(name, body string) string
	GBNF() string
}

// noArguments is the schema of a tool declared without parameters: the
// empty object only.
var noArguments = []byte(`{"type": "object", "properties": {}, "additionalProperties": false}`)

// ToolCallGrammar returns the GBNF grammar of a forced tool call in format
// (tool_choice "required": a call of one of tools, several when parallel;
// a named function: a call of that one), its arguments held to the tool's
// parameters schema (the subset grammar/jsonschema converts). The grammar
// is for the reply after any reasoning: a host sampling a thinking model
// under it disables thinking. Errors wrap ErrInvalidTool and name the tool.
func ToolCallGrammar(format ToolFormat, tools []Tool, choice ToolChoice, parallel bool) (string, error) {
	return toolCallGrammar(jsonschema.NewConverter(), format, tools, choice, parallel)
}

// CheckToolParameters reports whether a tool's parameters can hold a
// call's arguments: an object schema grammar/jsonschema converts. The error
// is why not: the schema describes something else, or the converter's
// *jsonschema.Error naming the keyword.
func CheckToolParameters(t Tool) error {
	schema, err := argumentsSchema(t.Parameters)
	if err != nil {
		return err
	}
	_, err = jsonschema.NewConverter().Add("args", schema)
	return err
}

// toolCallGrammar writes the forced-call grammar for format into conv and
// returns its GBNF text. The grammar is for the reply after any reasoning:
// a host sampling a thinking model under it should disable thinking (the
// prompt then ends with an empty think block) or start the grammar after
// "</think>".
func toolCallGrammar(conv schemaConverter, format ToolFormat, tools []Tool, choice ToolChoice, parallel bool) (string, error) {
	switch choice.Mode {
	case ToolRequired, ToolFunction:
	default:
		return "", fmt.Errorf("%w: a tool-call grammar needs tool_choice \"required\" or a function", ErrInvalidTool)
	}
	tools, err := activeTools(tools, choice)
	if err != nil {
		return "", err
	}
	// One rule per tool: the call object, in the format's key names.
	argsKey := "arguments"
	if format == ToolFormatLlama3 {
		argsKey = "parameters"
	}
	var calls []string
	for i, tool := range tools {
		schema, err := argumentsSchema(tool.Parameters)
		if err != nil {
			return "", fmt.Errorf("%w: tools[%d] (%s): parameters: %v", ErrInvalidTool, i, tool.Name, err)
		}
		if format == ToolFormatLFM2 {
			body, err := paramsGrammar(conv, i, schema, func(keys, rules []string, required []bool) string {
				return lfm2CallGrammar(tool.Name, keys, rules, required)
			})
			if err != nil {
				return "", fmt.Errorf("%w: tools[%d] (%s): parameters: %v", ErrInvalidTool, i, tool.Name, err)
			}
			calls = append(calls, conv.Rule(fmt.Sprintf("tool-%d-call", i), body))
			continue
		}
		if format == ToolFormatQwenXML || format == ToolFormatGemma4 {
			write := qwenXMLCallGrammar
			if format == ToolFormatGemma4 {
				write = gemma4CallGrammar
			}
			body, err := write(conv, i, tool, schema)
			if err != nil {
				return "", fmt.Errorf("%w: tools[%d] (%s): parameters: %v", ErrInvalidTool, i, tool.Name, err)
			}
			calls = append(calls, conv.Rule(fmt.Sprintf("tool-%d-call", i), body))
			continue
		}
		args, err := conv.Add(fmt.Sprintf("tool-%d-args", i), schema)
		if err != nil {
			return "", fmt.Errorf("%w: tools[%d] (%s): parameters: %v", ErrInvalidTool, i, tool.Name, err)
		}
		if format == ToolFormatHarmony {
			calls = append(calls, conv.Rule(fmt.Sprintf("tool-%d-call", i), harmonyCallGrammar(tool.Name, args)))
			continue
		}
		body := gbnfLiteral(`{"name": `+quoteJSON(tool.Name)+`, "`+argsKey+`": `) + " " + args
		if format == ToolFormatMistral {
			body += " " + gbnfLiteral(`, "id": "`) + strings.Repeat(" [a-zA-Z0-9]", 9) + " " + gbnfLiteral(`"`)
		}
		body += " " + gbnfLiteral("}")
		calls = append(calls, conv.Rule(fmt.Sprintf("tool-%d-call", i), body))
	}
	call := conv.Rule("tool-call", strings.Join(calls, " | "))

	// The calls, as the format writes one or several: at most
	// MaxParallelCalls, so a model that repeats itself stops.
	more := fmt.Sprintf("{0,%d}", MaxParallelCalls-1)
	var root string
	switch format {
	case ToolFormatHermes:
		block := conv.Rule("tool-call-block", gbnfLiteral(hermesCallOpen+"\n")+" "+call+" "+gbnfLiteral("\n"+hermesCallClose))
		root = block
		if parallel {
			root = block + " ( " + gbnfLiteral("\n") + " " + block + " )" + more
		}
	case ToolFormatQwenXML:
		root = call
		if parallel {
			root = call + " ( " + gbnfLiteral("\n") + " " + call + " )" + more
		}
	case ToolFormatLFM2:
		list := call
		if parallel {
			list = call + " ( " + gbnfLiteral(", ") + " " + call + " )" + more
		}
		root = gbnfLiteral(lfm2CallStart+"[") + " " + list + " " + gbnfLiteral("]"+lfm2CallEnd)
	case ToolFormatGemma4:
		block := gbnfLiteral(gemma4CallOpen) + " " + call + " " + gbnfLiteral(gemma4CallClose)
		root = block
		if parallel {
			root = block + " ( " + block + " )" + more
		}
	case ToolFormatHarmony:
		// One call a message: <|call|> ends the reply. Analysis messages
		// may come first, as llama.cpp's grammar allows.
		root = harmonyAnalysis(conv) + "* " + call
	case ToolFormatLlama3:
		root = call
		if parallel {
			root = call + " ( " + gbnfLiteral("; ") + " " + call + " )" + more
		}
	case ToolFormatMistral:
		list := call
		if parallel {
			list = call + " ( " + gbnfLiteral(", ") + " " + call + " )" + more
		}
		root = gbnfLiteral(mistralCalls+"[") + " " + list + " " + gbnfLiteral("]")
	case ToolFormatGeneric:
		if parallel {
			root = gbnfLiteral(`{"tool_calls": [`) + " " + call + " ( " + gbnfLiteral(", ") + " " + call + " )" + more + " " + gbnfLiteral("]}")
		} else {
			root = gbnfLiteral(`{"tool_call": `) + " " + call + " " + gbnfLiteral("}")
		}
	default:
		return "", fmt.Errorf("%w: %v", ErrUnknownToolFormat, format)
	}
	conv.Rule("root", root)
	return conv.GBNF(), nil
}

// MaxParallelCalls is the most calls a forced reply with parallel calls
// may make.
const MaxParallelCalls = 16

// argumentsSchema is the schema a call's arguments are held to: a tool's
// parameters must describe an object (OpenAI's rule, and every format
// writes the arguments as one); none, or an empty schema, is any object.
func argumentsSchema(params json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(params)) == 0 {
		return noArguments, nil
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(params, &probe); err != nil {
		return nil, fmt.Errorf("must be a JSON object (a JSON schema), got %.40s", params)
	}
	if len(probe) == 0 {
		return []byte(`{"type": "object"}`), nil
	}
	if t, ok := probe["type"]; ok && string(bytes.TrimSpace(t)) != `"object"` {
		return nil, fmt.Errorf(`must describe an object ("type": "object"), got "type": %s`, t)
	}
	if _, ok := probe["type"]; !ok {
		// Other keywords without a type ({"properties": ...}): an object,
		// as OpenAI reads it.
		probe["type"] = json.RawMessage(`"object"`)
		return json.Marshal(probe)
	}
	return params, nil
}

// gbnfLiteral quotes s as a GBNF string literal: '"', '\\' and control
// characters escaped (\n, \r, \t, the rest as \xHH), UTF-8 as it is.
func gbnfLiteral(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(&b, `\x%02X`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
