package openai

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTemplateOptionsDate: chat_template_kwargs.date_string is the date the
// template writes (chat.Options.Date), absent or null none; any other type
// is an error naming the field.
func TestTemplateOptionsDate(t *testing.T) {
	for _, tc := range []struct {
		kwargs, date, errParam string
	}{
		{``, "", ""},
		{`{"date_string": "2026-01-02"}`, "2026-01-02", ""},
		{`{"date_string": "26 Jul 2024", "enable_thinking": false}`, "26 Jul 2024", ""},
		{`{"date_string": null}`, "", ""},
		{`{"date_string": 20260102}`, "", "chat_template_kwargs.date_string"},
	} {
		r := &ChatRequest{ChatTemplateKwargs: json.RawMessage(tc.kwargs)}
		opts, e := r.templateOptions()
		if tc.errParam != "" {
			require.NotNil(t, e, tc.kwargs)
			assert.Contains(t, e.Message, "must be a string, got a number", tc.kwargs)
			assert.Equal(t, tc.errParam, e.Param, tc.kwargs)
			continue
		}
		require.Nil(t, e, tc.kwargs)
		assert.Equal(t, tc.date, opts.Date, tc.kwargs)
	}
}
