package jsbridge

import (
	"context"
	"syscall/js"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/models"
)

// TestLoadKVType: load's kvType chooses the session's KV cache ('auto',
// also when absent or null, resolves for the model: stories260K is small,
// so 'f32'); info says which, and a greedy generation gives the tokens the
// engine gives with that cache. Anything else is an invalid argument named
// kvType.
func TestLoadKVType(t *testing.T) {
	for _, c := range []struct {
		name string
		opt  any // the kvType option; nil: absent
		want engine.KVType
	}{
		{"absent", nil, engine.KVF32}, {"null", js.Null(), engine.KVF32}, {"auto", "auto", engine.KVF32},
		{"f32", "f32", engine.KVF32}, {"f16", "f16", engine.KVF16},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := New()
			defer b.Release()
			opts := map[string]any{}
			if c.opt != nil {
				opts["kvType"] = c.opt
			}
			info := mustCall(t, b, "load", jsBytes(models.Default()), obj(opts))
			assert.Equal(t, c.want.String(), info.Get("kvType").String())
			assert.Equal(t, c.want.String(), mustCall(t, b, "info").Get("kvType").String())

			s, err := nativeModel(t).NewSession(engine.SessionOptions{KVType: c.want})
			require.NoError(t, err)
			want, err := s.Generate(context.Background(), "Once upon a time", engine.GenerateOptions{MaxTokens: 24}, nil)
			require.NoError(t, err)
			res := mustCall(t, b, "generate", "Once upon a time", greedy(24))
			assert.Equal(t, want.Tokens, ints(res.Get("tokens")))
		})
	}
	b := New()
	defer b.Release()
	for _, bad := range []any{"F16", "fp16", "", 16, true} {
		_, err := call(t, b, "load", jsBytes(models.Default()), obj(map[string]any{"kvType": bad}))
		var je *jsError
		require.ErrorAs(t, err, &je, "%v", bad)
		assert.Equal(t, "invalid_argument", je.Code)
		assert.Equal(t, "kvType", je.Field)
		assert.Equal(t, "kv_type", je.Param)
		assert.Contains(t, je.Message, "kvType must be 'auto', 'f16' or 'f32', got ")
	}
}
