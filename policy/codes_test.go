package policy

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/gpu"
	"github.com/wasmlm/wasmlm/sampling"
	"github.com/wasmlm/wasmlm/tokenizer"
)

// TestCodeOf: every error a host can meet has one code, whether the engine
// made it, a package below it, or a package above it (with
// engine.NewError), and however it is wrapped.
func TestCodeOf(t *testing.T) {
	hostErr := engine.NewError("no_model", "host: no model loaded")
	tests := []struct {
		err  error
		want engine.Code
	}{
		{nil, ""},
		{&engine.OptionError{Field: "top_k", Problem: "must be >= 0, got -1"}, engine.CodeInvalidArgument},
		{fmt.Errorf("chat: %w", &engine.OptionError{Field: "stop[2]", Problem: "is empty"}), engine.CodeInvalidArgument},
		{&engine.OptionError{Field: "top_p", Problem: "...", Err: &sampling.ParamError{Field: "top_p"}}, engine.CodeInvalidArgument},
		{&sampling.ParamError{Field: "top_p", Problem: "..."}, engine.CodeInvalidArgument},
		{fmt.Errorf("%w: 600 tokens, the context holds 512", engine.ErrPromptTooLong), engine.CodePromptTooLong},
		{fmt.Errorf("%w: no BOS", engine.ErrEmptyPrompt), engine.CodeInvalidArgument},
		{engine.ErrBusy, engine.CodeBusy},
		{fmt.Errorf("%w: bad", tokenizer.ErrInvalidUTF8), engine.CodeInvalidArgument},
		{fmt.Errorf("%w: wizard", chat.ErrUnknownRole), engine.CodeInvalidArgument},
		{fmt.Errorf("%w: %w", engine.ErrUnsupported, chat.ErrUnknownTemplate), engine.CodeUnsupportedModel},
		{chat.ErrUnknownTemplate, engine.CodeUnsupportedModel},
		{fmt.Errorf("%w: %w", engine.ErrFormat, gguf.ErrNotFound), engine.CodeInvalidModel},
		{gguf.ErrTruncated, engine.CodeInvalidModel},
		{fmt.Errorf("%w: architecture bert", gpu.ErrUnsupported), engine.CodeDeviceUnsupported},
		{fmt.Errorf("weights: %w", gpu.ErrOutOfMemory), engine.CodeDeviceUnsupported},
		{fmt.Errorf("generating: %w", gpu.ErrDeviceLost), engine.CodeDeviceLost},
		{fmt.Errorf("loading: %w", hostErr), "no_model"},
		{errors.New("something else"), engine.CodeUnknown},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, CodeOf(tt.err), "%v", tt.err)
	}
	assert.ErrorIs(t, fmt.Errorf("x: %w", hostErr), hostErr, "a coded sentinel matches itself")
	assert.NotErrorIs(t, engine.NewError("no_model", "host: no model loaded"), hostErr, "and only itself")
}
