package chat

import (
	"encoding/json"
	"strings"
	"testing"
)

// weatherTool's string parameters have an enum and a maxLength, which the
// forced-call grammars of the XML and Gemma 4 formats hold their raw
// string values to.
var weatherTool = Tool{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","maxLength":8},"unit":{"type":"string","enum":["c","f"]},"note":{"type":"string","minLength":2}},"required":["city","unit"]}`)}

// TestQwenXMLGrammarStringSchemas: a string parameter's raw text follows
// its schema's enum, maxLength and minLength.
func TestQwenXMLGrammarStringSchemas(t *testing.T) {
	call := func(args ...string) string {
		var b strings.Builder
		b.WriteString("<tool_call>\n<function=get_weather>\n")
		for i := 0; i+1 < len(args); i += 2 {
			b.WriteString("<parameter=" + args[i] + ">\n" + args[i+1] + "\n</parameter>\n")
		}
		b.WriteString("</function>\n</tool_call>")
		return b.String()
	}
	checkToolGrammar(t, ToolFormatQwenXML, []Tool{weatherTool}, []toolGrammarCase{
		{"required", ToolChoice{Mode: ToolRequired}, false,
			[]string{
				call("city", "Paris", "unit", "c"),
				call("city", "", "unit", "f"),
				call("city", "12345678", "unit", "c", "note", "ok"),
				call("city", "Paris", "unit", "c", "note", "two\nlines"),
			},
			[]string{
				call("city", "123456789", "unit", "c"),          // longer than maxLength
				call("city", "Paris", "unit", "k"),              // not in the enum
				call("city", "Paris", "unit", "cf"),             // not in the enum
				call("city", "Paris", "unit", ""),               // not in the enum
				call("city", "Par\nis", "unit", "c"),            // a bounded value is one line
				call("city", "Paris", "unit", "c", "note", "x"), // shorter than minLength
				call("unit", "c", "city", "Paris"),              // required ones in order
				call("city", "Paris"),                           // unit is required
			}},
	})
}

// TestGemma4GrammarStringSchemas: a string parameter follows its schema's
// enum, maxLength and minLength.
func TestGemma4GrammarStringSchemas(t *testing.T) {
	const open, end, q = "<|tool_call>call:get_weather{", "}<tool_call|>", `<|"|>`
	checkToolGrammar(t, ToolFormatGemma4, []Tool{weatherTool}, []toolGrammarCase{
		{"required", ToolChoice{Mode: ToolRequired}, false,
			[]string{
				open + "city:" + q + "Paris" + q + ",unit:" + q + "c" + q + end,
				open + "city:" + q + "12345678" + q + ",unit:" + q + "f" + q + ",note:" + q + "a<b" + q + end,
			},
			[]string{
				open + "city:" + q + "123456789" + q + ",unit:" + q + "c" + q + end, // longer than maxLength
				open + "city:" + q + "1234567<" + q + ",unit:" + q + "c" + q + end,  // no "<" in a bounded string
				open + "city:" + q + "Paris" + q + ",unit:" + q + "k" + q + end,     // not in the enum
				open + "city:" + q + "Paris" + q + ",unit:" + q + "c" + q + ",note:" + q + "x" + q + end,
			}},
	})
}
