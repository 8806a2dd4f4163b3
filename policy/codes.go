package policy

import (
	"errors"

	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/gpu"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/engine/vocab"
	"github.com/wasmlm/wasmlm/sampling"
	"github.com/wasmlm/wasmlm/tokenizer"
	"github.com/wasmlm/wasmlm/tokenizer/bpe"
)

// CodeOf classifies err for the hosts, one way for all of them: it is the
// code property of a rejected JavaScript call and, mapped to an HTTP
// status, the code of an HTTP API error. It is the code of the first
// error in err's chain that says its own (engine.CodeOf: the engine's
// sentinels, those made with engine.NewError, an *engine.OptionError),
// else the code of the sentinel it wraps from the packages that cannot
// say theirs (tokenizer, sampling, chat, engine/gguf, ...), else
// engine.CodeUnknown.
func CodeOf(err error) engine.Code {
	if code := engine.CodeOf(err); code != engine.CodeUnknown {
		return code
	}
	for _, k := range kinds() {
		for _, target := range k.errs {
			if errors.Is(err, target) {
				return k.code
			}
		}
	}
	return engine.CodeUnknown
}

// kinds classifies the sentinels of the packages that cannot say their
// codes themselves.
func kinds() []struct {
	code engine.Code
	errs []error
} {
	return []struct {
		code engine.Code
		errs []error
	}{
		{engine.CodeInvalidArgument, []error{sampling.ErrInvalidParams, tokenizer.ErrInvalidUTF8, tokenizer.ErrTokenOutOfRange,
			tokenizer.ErrTextTooLong, tokenizer.ErrNoToken, chat.ErrUnknownRole, chat.ErrNoMessages}},
		{engine.CodeUnsupportedModel, []error{gguf.ErrUnsupported, vocab.ErrUnsupportedModel, bpe.ErrUnknownPreTokenizer,
			bpe.ErrUnsupported, tensor.ErrUnsupportedType, chat.ErrUnknownTemplate}},
		{engine.CodeInvalidModel, []error{gguf.ErrFormat, gguf.ErrTruncated, gguf.ErrNotFound, gguf.ErrType, vocab.ErrFormat,
			tokenizer.ErrFormat, tensor.ErrUnknownType, tensor.ErrShape}},
		// The GPU backend's: a device that cannot run the model (or
		// allocate its buffers), and one lost mid-call.
		{engine.CodeDeviceUnsupported, []error{gpu.ErrUnsupported, gpu.ErrOutOfMemory}},
		{engine.CodeDeviceLost, []error{gpu.ErrDeviceLost}},
	}
}
