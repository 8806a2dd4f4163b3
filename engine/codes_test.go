package engine

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/sampling"
)

// TestCodeOf: the engine's errors say their codes, however they are
// wrapped; an error of a package below that the engine did not wrap has
// none it can say (policy.CodeOf classifies those).
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
		{fmt.Errorf("%w: 600 tokens, the context holds 512", ErrPromptTooLong), CodePromptTooLong},
		{fmt.Errorf("%w: no BOS", ErrEmptyPrompt), CodeInvalidArgument},
		{ErrBusy, CodeBusy},
		{fmt.Errorf("%w: %w", ErrFormat, gguf.ErrNotFound), CodeInvalidModel},
		{fmt.Errorf("loading: %w", hostErr), "no_model"},
		{gguf.ErrTruncated, CodeUnknown},
		{errors.New("something else"), CodeUnknown},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, CodeOf(tt.err), "%v", tt.err)
	}
	assert.ErrorIs(t, fmt.Errorf("x: %w", hostErr), hostErr, "a coded sentinel matches itself")
	assert.NotErrorIs(t, NewError("no_model", "host: no model loaded"), hostErr, "and only itself")
}
