package engine

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/sampling"
	"github.com/wasmlm/wasmlm/tokenizer"
)

// TestCodeOf: every error a host can meet has one code, whether the engine
// made it, a package below it, or a package above it (with NewError), and
// however it is wrapped.
func TestCodeOf(t *testing.T) {
	hostErr := NewError("no_model", "host: no model loaded")
	tests := []struct {
		err  error
		want Code
	}{
		{nil, ""},
		{optionError("top_k", "must be >= 0, got -1"), CodeInvalidArgument},
		{fmt.Errorf("chat: %w", optionError("stop[2]", "is empty")), CodeInvalidArgument},
		{&OptionError{Field: "top_p", Problem: "...", Err: &sampling.ParamError{Field: "top_p"}}, CodeInvalidArgument},
		{&sampling.ParamError{Field: "top_p", Problem: "..."}, CodeInvalidArgument},
		{fmt.Errorf("%w: 600 tokens, the context holds 512", ErrPromptTooLong), CodePromptTooLong},
		{fmt.Errorf("%w: no BOS", ErrEmptyPrompt), CodeInvalidArgument},
		{ErrBusy, CodeBusy},
		{fmt.Errorf("%w: bad", tokenizer.ErrInvalidUTF8), CodeInvalidArgument},
		{fmt.Errorf("%w: wizard", chat.ErrUnknownRole), CodeInvalidArgument},
		{fmt.Errorf("%w: %w", ErrUnsupported, chat.ErrUnknownTemplate), CodeUnsupportedModel},
		{chat.ErrUnknownTemplate, CodeUnsupportedModel},
		{fmt.Errorf("%w: %w", ErrFormat, gguf.ErrNotFound), CodeInvalidModel},
		{gguf.ErrTruncated, CodeInvalidModel},
		{fmt.Errorf("loading: %w", hostErr), "no_model"},
		{errors.New("something else"), CodeUnknown},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, CodeOf(tt.err), "%v", tt.err)
	}
	assert.ErrorIs(t, fmt.Errorf("x: %w", hostErr), hostErr, "a coded sentinel matches itself")
	assert.NotErrorIs(t, NewError("no_model", "host: no model loaded"), hostErr, "and only itself")
}
