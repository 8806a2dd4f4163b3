package jsbridge

import (
	"math"
	"syscall/js"

	"github.com/wasmlm/wasmlm/openai"
)

// chatTokens(request) → number: how many tokens the chat request's prompt
// takes — its messages (and tools) as the model's chat template writes
// them, ending with the opening of the reply — which chat would evaluate;
// nothing is generated. The request is chat's (OpenAI's JSON, decoded and
// checked the same way), but a prompt longer than the session is counted,
// not refused: the Prompt API (web/prompt-api.js) measures inputs that
// may not fit to decide what to evict. It does not wait for a generation.
func (b *Binding) parseChatTokens(args []js.Value) (work, error) {
	body, err := b.str(arg(args, 0), "request")
	if err != nil {
		return nil, err
	}
	return func() (any, error) {
		m, _, err := b.currentModel()
		if err != nil {
			return nil, err
		}
		// A context no prompt reaches: the count is the point, not the room.
		unbounded := math.MaxInt32
		api := openai.API{Model: m, Grammars: b.grammarsOf(m), Context: unbounded, MaxTokens: unbounded}
		req := openai.ChatRequest{SamplingRequest: api.NewSamplingRequest()}
		if e := openai.Decode([]byte(body), &req); e != nil {
			return nil, e
		}
		job, e := api.ChatJob(&req)
		if e != nil {
			return nil, e
		}
		return len(job.Prompt.Tokens), nil
	}, nil
}
