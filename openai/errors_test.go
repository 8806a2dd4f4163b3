package openai

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
)

// TestErrorOfNamesTheWholePath: an invalid option's param is the whole
// path its message starts with, an index at its end included; only the
// engine's "prompt" becomes the endpoint's prompt field.
func TestErrorOfNamesTheWholePath(t *testing.T) {
	for _, tc := range []struct{ field, promptParam, param string }{
		{"stop[2]", "prompt", "stop[2]"},
		{"response_format.json_schema.schema.anyOf[2]", "prompt", "response_format.json_schema.schema.anyOf[2]"},
		{"tools[0].function.parameters.properties.a.type", "messages", "tools[0].function.parameters.properties.a.type"},
		{"logit_bias.7", "prompt", "logit_bias.7"},
		{"input[3]", "input", "input[3]"},
		{"max_tokens", "prompt", "max_tokens"},
		{"prompt", "messages", "messages"},
	} {
		err := fmt.Errorf("wrapped: %w", &engine.OptionError{Field: tc.field, Problem: "is bad"})
		e := ErrorOf(err, tc.promptParam)
		require.Equal(t, TypeInvalidRequest, e.Type, tc.field)
		require.Equal(t, tc.param, e.Param, tc.field)
		require.Equal(t, tc.field+" is bad", e.Message, tc.field)
	}
}
