package chat

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeConverter stands in for grammar/jsonschema's Converter: a schema's
// rule matches one fixed JSON text (args), which lets the test expand a
// grammar into the one reply it allows.
type fakeConverter struct {
	args    string
	schemas []string
	names   []string
	bodies  map[string]string
}

func (c *fakeConverter) Add(name string, schema []byte) (string, error) {
	if !json.Valid(schema) {
		return "", assert.AnError
	}
	c.schemas = append(c.schemas, string(schema))
	return c.Rule(name, gbnfLiteral(c.args)), nil
}

func (c *fakeConverter) Rule(name, body string) string {
	if c.bodies == nil {
		c.bodies = map[string]string{}
	}
	c.names = append(c.names, name)
	c.bodies[name] = body
	return name
}

func (c *fakeConverter) GBNF() string {
	var b strings.Builder
	for _, n := range c.names {
		b.WriteString(n + " ::= " + c.bodies[n] + "\n")
	}
	return b.String()
}

// expand returns the shortest text rule allows, taking the first
// alternative, no repetition, and 'a' for a character class: enough for the
// grammars toolCallGrammar writes.
func (c *fakeConverter) expand(t *testing.T, rule string) string {
	body, ok := c.bodies[rule]
	require.True(t, ok, rule)
	body, _, _ = strings.Cut(body, " | ") // the first alternative
	var b strings.Builder
	for body = strings.TrimSpace(body); body != ""; body = strings.TrimSpace(body) {
		switch {
		case body[0] == '"':
			lit, err := strconv.QuotedPrefix(body)
			require.NoError(t, err, body)
			s, err := strconv.Unquote(lit)
			require.NoError(t, err)
			b.WriteString(s)
			body = body[len(lit):]
		case body[0] == '[':
			end := strings.IndexByte(body, ']')
			b.WriteByte('a')
			body = body[end+1:]
		case body[0] == '(':
			end := strings.Index(body, "){0,")
			body = body[end+1:]
			body = body[strings.IndexByte(body, '}')+1:]
		default:
			name, rest, _ := strings.Cut(body, " ")
			b.WriteString(c.expand(t, name))
			body = rest
		}
	}
	return b.String()
}

// TestToolCallGrammarShape: for every format, the forced-call grammar's
// shortest reply is a call ParseToolCalls reads back, to the first allowed
// tool with the arguments its schema rule gives; the schema handed to the
// converter is the tool's parameters (or the empty object's for none); a
// named function allows that tool only; parallel adds a repetition.
func TestToolCallGrammarShape(t *testing.T) {
	tools := []Tool{
		{Name: "get_weather", Parameters: json.RawMessage(`{"type": "object", "properties": {"location": {"type": "string"}}}`)},
		{Name: "get_time"},
	}
	for _, format := range []ToolFormat{ToolFormatGeneric, ToolFormatLlama3, ToolFormatHermes, ToolFormatMistral} {
		for _, choice := range []ToolChoice{{Mode: ToolRequired}, {Mode: ToolFunction, Function: "get_time"}} {
			for _, parallel := range []bool{false, true} {
				conv := &fakeConverter{args: `{"location": "Paris"}`}
				gbnf, err := toolCallGrammar(conv, format, tools, choice, parallel)
				require.NoError(t, err)
				assert.Contains(t, gbnf, "root ::= ")
				assert.Equal(t, parallel, strings.Contains(conv.bodies["root"], fmt.Sprintf("){0,%d}", MaxParallelCalls-1)), "%v parallel=%v: %s", format, parallel, gbnf)
				reply := conv.expand(t, "root")
				_, calls, err := ParseToolCalls(format, reply, 0)
				require.NoError(t, err)
				require.Len(t, calls, 1, "%v: %q", format, reply)
				if choice.Mode == ToolFunction {
					assert.Equal(t, "get_time", calls[0].Name)
					assert.Equal(t, []string{string(noArguments)}, conv.schemas)
				} else {
					assert.Equal(t, "get_weather", calls[0].Name)
					assert.Equal(t, []string{string(tools[0].Parameters), string(noArguments)}, conv.schemas)
				}
				assert.Equal(t, `{"location":"Paris"}`, calls[0].Arguments)
			}
		}
	}
	_, err := toolCallGrammar(&fakeConverter{}, ToolFormatHermes, tools, ToolChoice{}, false)
	require.ErrorIs(t, err, ErrInvalidTool, "auto is not forced")
	_, err = toolCallGrammar(&fakeConverter{}, ToolFormatHermes, tools, ToolChoice{Mode: ToolFunction, Function: "nope"}, false)
	require.ErrorIs(t, err, ErrInvalidTool)
	_, err = toolCallGrammar(&fakeConverter{}, ToolFormatHermes, nil, ToolChoice{Mode: ToolRequired}, false)
	require.ErrorIs(t, err, ErrInvalidTool)
}

func TestGBNFLiteral(t *testing.T) {
	assert.Equal(t, `"<tool_call>\n{\"name\": \"a\\b\"\t\x01☃"`, gbnfLiteral("<tool_call>\n{\"name\": \"a\\b\"\t\x01☃"))
}

// TestArgumentsSchema: a call's arguments are an object, whatever the
// tool's parameters leave open; parameters that describe anything else are
// refused, naming what they are.
func TestArgumentsSchema(t *testing.T) {
	for _, tc := range []struct{ params, want, err string }{
		{"", string(noArguments), ""},
		{`{}`, `{"type": "object"}`, ""},
		{`{"properties": {"a": {"type": "string"}}}`, `{"properties":{"a":{"type":"string"}},"type":"object"}`, ""},
		{`{"type": "object", "required": []}`, `{"type": "object", "required": []}`, ""},
		{`{"type": "string"}`, "", `must describe an object ("type": "object"), got "type": "string"`},
		{`{"type": ["object", "null"]}`, "", `got "type": ["object", "null"]`},
		{`[1]`, "", "must be a JSON object"},
		{`true`, "", "must be a JSON object"},
	} {
		got, err := argumentsSchema(json.RawMessage(tc.params))
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.params)
			continue
		}
		require.NoError(t, err, tc.params)
		assert.Equal(t, tc.want, string(got), tc.params)
	}
}
