package jsbridge

import (
	"syscall/js"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/models"
)

// TestBigIntArguments: a BigInt, a JavaScript type syscall/js has no flag
// for (js.Value.Type panics on one), in any argument or option of any
// method rejects with invalid_argument naming the field and saying it got
// a bigint — never "internal" — and the binding works afterwards.
func TestBigIntArguments(t *testing.T) {
	b := newLoaded(t)
	big := js.Global().Call("BigInt", 7)
	opts := func(k string, v any) js.Value { return obj(map[string]any{k: v}) }
	schema := func(s any) js.Value {
		return opts("responseFormat", map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "n", "schema": s}})
	}
	onToken := jsFunction("", "")
	cases := []struct {
		method string
		args   []any
		field  string
		want   string
	}{
		{"generate", []any{big}, "prompt", "prompt must be a string, got bigint 7"},
		{"generate", []any{"x", big}, "options", "options must be an object, got bigint 7"},
		{"generate", []any{"x", opts("maxTokens", big)}, "maxTokens", "maxTokens must be an integer, got bigint 7"},
		{"generate", []any{"x", opts("temperature", big)}, "temperature", "temperature must be a number, got bigint 7"},
		{"generate", []any{"x", opts("topK", big)}, "topK", "topK must be an integer, got bigint 7"},
		{"generate", []any{"x", opts("topP", big)}, "topP", "topP must be a number, got bigint 7"},
		{"generate", []any{"x", opts("minP", big)}, "minP", "minP must be a number, got bigint 7"},
		{"generate", []any{"x", opts("repeatPenalty", big)}, "repeatPenalty", "repeatPenalty must be a number, got bigint 7"},
		{"generate", []any{"x", opts("presencePenalty", big)}, "presencePenalty", "presencePenalty must be a number, got bigint 7"},
		{"generate", []any{"x", opts("frequencyPenalty", big)}, "frequencyPenalty", "frequencyPenalty must be a number, got bigint 7"},
		{"generate", []any{"x", opts("seed", big)}, "seed", "seed must be an integer, got bigint 7"},
		{"generate", []any{"x", opts("stop", big)}, "stop", "stop must be a string or an array of strings, got bigint 7"},
		{"generate", []any{"x", opts("stop", []any{"a", big})}, "stop[1]", "stop[1] must be a string, got bigint 7"},
		{"generate", []any{"x", opts("trace", big)}, "trace", "trace must be a boolean, got bigint 7"},
		{"generate", []any{"x", opts("signal", big)}, "signal", "signal must be an AbortSignal, got bigint 7"},
		{"generate", []any{"x", opts("onPromptProgress", big)}, "onPromptProgress", "onPromptProgress must be a function, got bigint 7"},
		{"generate", []any{"x", opts("grammar", big)}, "grammar", "grammar must be a string (a GBNF grammar), got bigint 7"},
		{"generate", []any{"x", opts("responseFormat", big)}, "responseFormat", "responseFormat must be an object, got bigint 7"},
		{"generate", []any{"x", opts("responseFormat", map[string]any{"type": big})}, "responseFormat.type", "responseFormat.type must be 'text', 'json_object' or 'json_schema', got bigint 7"},
		{"generate", []any{"x", schema(big)}, "responseFormat.json_schema.schema", "responseFormat.json_schema.schema must be a JSON schema (an object), got bigint 7"},
		{"generate", []any{"x", schema(map[string]any{"maxLength": big})}, "responseFormat.json_schema.schema", "responseFormat.json_schema.schema must be JSON: TypeError"},
		{"stream", []any{"x", opts("maxTokens", big), onToken}, "maxTokens", "maxTokens must be an integer, got bigint 7"},
		{"stream", []any{"x", nil, big}, "onToken", "onToken must be a function, got bigint 7"},
		{"chat", []any{big}, "request", "request must be a string, got bigint 7"},
		{"chat", []any{chatRequest(t, map[string]any{"messages": userSays("x")}), big}, "options", "options must be an object, got bigint 7"},
		{"tokenize", []any{big}, "text", "text must be a string, got bigint 7"},
		{"tokenize", []any{"x", opts("addBos", big)}, "addBos", "addBos must be a boolean, got bigint 7"},
		{"tokenize", []any{"x", opts("special", big)}, "special", "special must be a boolean, got bigint 7"},
		{"detokenize", []any{big}, "ids", "ids must be an array, got bigint 7"},
		{"detokenize", []any{[]any{1, big}}, "ids[1]", "ids[1] must be an integer token id, got bigint 7"},
		{"embed", []any{big}, "input", "input must be a string or an array of strings, got bigint 7"},
		{"embed", []any{[]any{"a", big}}, "input[1]", "input[1] must be a string, got bigint 7"},
		{"embed", []any{"a", opts("truncate", big)}, "truncate", "truncate must be a boolean, got bigint 7"},
		{"embed", []any{"a", opts("normalize", big)}, "normalize", "normalize must be a boolean, got bigint 7"},
		{"rerank", []any{big, []any{"a"}}, "query", "query must be a string, got bigint 7"},
		{"rerank", []any{"q", []any{big}}, "documents[0]", "documents[0] must be a string, got bigint 7"},
		{"load", []any{big}, "model", "model must be a Uint8Array or an ArrayBuffer, got bigint 7"},
		{"load", []any{jsBytes(models.Default()), opts("contextLength", big)}, "contextLength", "contextLength must be an integer, got bigint 7"},
		{"load", []any{jsBytes(models.Default()), opts("kvType", big)}, "kvType", "kvType must be"},
		{"load", []any{jsBytes(models.Default()), opts("device", big)}, "device", "device must be 'auto', 'webgpu' or 'cpu', got bigint 7"},
		{"load", []any{jsBytes(models.Default()), opts("tokenizer", big)}, "tokenizer", "tokenizer must be a Uint8Array or an ArrayBuffer, got bigint 7"},
		{"inspect", []any{[]any{}, []any{}, opts("contextLength", big)}, "contextLength", "contextLength must be an integer, got bigint 7"},
		{"inspect", []any{[]any{}, []any{}, opts("workers", big)}, "workers", "workers must be an integer, got bigint 7"},
		{"inspect", []any{[]any{}, []any{}, opts("deviceMemory", big)}, "deviceMemory", "deviceMemory must be navigator.deviceMemory (GiB, > 0), got bigint 7"},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.field, func(t *testing.T) {
			_, err := call(t, b, c.method, c.args...)
			requireField(t, err, "invalid_argument", c.field)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	res := mustCall(t, b, "generate", "Once", greedy(4))
	require.Equal(t, 4, res.Get("tokens").Length(), "the binding still generates")
}
