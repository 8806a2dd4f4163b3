package jsbridge

import (
	"context"
	"errors"
	"fmt"
	"syscall/js"
	"time"

	"github.com/wasmlm/wasmlm/engine"
)

// embedFields and rerankFields are the keys of embed's and rerank's
// options.
var (
	embedFields  = []string{"truncate", "normalize", "signal", "session"}
	rerankFields = []string{"truncate", "signal", "session"}
)

// embedRequest is one parsed embed or rerank call.
type embedRequest struct {
	method    string   // "embed" or "rerank"
	texts     []string // embed's input, rerank's documents
	listed    bool     // embed's input was an array (not one string)
	query     string   // rerank
	opts      engine.EmbedOptions
	signal    js.Value // an AbortSignal, or undefined
	listField string   // "input" or "documents": the name errors give the texts
	session   int      // the session it runs in (sessions_js.go)
}

// parseEmbed: embed(input, {truncate = false, normalize = true, signal}),
// input a string or an array of strings.
func (b *Binding) parseEmbed(args []js.Value) (work, error) {
	r := &embedRequest{method: "embed", listField: "input"}
	var err error
	if r.texts, r.listed, err = b.stringOrStrings(arg(args, 0), "input", engine.MaxEmbedInputs); err != nil {
		return nil, err
	}
	f, err := b.readFields(arg(args, 1), "options", embedFields)
	if err != nil {
		return nil, err
	}
	normalize, err := f.boolean("normalize", true)
	if err != nil {
		return nil, err
	}
	r.opts.Raw = !normalize
	return b.embedWork(f, r)
}

// parseRerank: rerank(query, documents, {truncate = false, signal}).
func (b *Binding) parseRerank(args []js.Value) (work, error) {
	r := &embedRequest{method: "rerank", listField: "documents", listed: true}
	var err error
	if r.query, err = b.str(arg(args, 0), "query"); err != nil {
		return nil, err
	}
	if r.texts, err = b.strings(arg(args, 1), "documents", engine.MaxEmbedInputs); err != nil {
		return nil, err
	}
	f, err := b.readFields(arg(args, 2), "options", rerankFields)
	if err != nil {
		return nil, err
	}
	return b.embedWork(f, r)
}

// embedWork reads the options embed and rerank share, truncate and
// signal, and joins the queue: what is left of the call is its work.
func (b *Binding) embedWork(f fields, r *embedRequest) (work, error) {
	var err error
	if r.opts.Truncate, err = f.boolean("truncate", false); err != nil {
		return nil, err
	}
	if r.signal, err = f.signal(); err != nil {
		return nil, err
	}
	if r.session, err = f.session(); err != nil {
		return nil, err
	}
	turn := b.queue.join()
	return func() (any, error) { return b.embed(r, turn) }, nil
}

// embed waits for the request's turn (embeddings share the session with
// generations, so they queue with them), then embeds or ranks. An abort,
// before the turn or between the engine's passes, rejects with ErrAborted:
// there is no partial result to resolve with.
func (b *Binding) embed(r *embedRequest, turn *ticket) (_ any, err error) {
	defer b.queue.leave(turn)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	unwatch := b.watchAbort(r.signal, cancel)
	defer unwatch()
	if !b.queue.wait(ctx, turn) {
		return nil, errAborted(r.method, "before its turn came")
	}
	_, s, err := b.sessionFor(r.session)
	if err != nil {
		return nil, err
	}
	defer func() {
		// As run does: a panic mid-pass may leave the session's state out
		// of step, so the next call starts from a fresh one.
		if p := recover(); p != nil {
			b.resetSession(s)
			err = b.panicError(r.method, p)
		}
	}()
	y := b.newYielder()
	defer y.close()
	yctx := &yieldingContext{Context: ctx, y: y, last: time.Now(), hook: b.passHook}
	var v map[string]any
	if r.method == "rerank" {
		var scores []engine.Score
		if scores, err = s.Rerank(yctx, r.query, r.texts, r.opts); err == nil {
			v = scoresValue(scores)
		}
	} else {
		var embs []engine.Embedding
		if embs, err = s.Embed(yctx, r.texts, r.opts); err == nil {
			v = b.embeddingsValue(embs, s.Model().EmbeddingLength())
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		return nil, errAborted(r.method, "while it ran")
	case err != nil:
		return nil, r.fieldOf(err)
	}
	v["yieldMs"] = ms(y.spent)
	return v, nil
}

// errAborted is the error of an embed or rerank call its signal aborted
// when (before its turn came, while it ran).
func errAborted(method, when string) error {
	what := map[string]string{"embed": "embedding", "rerank": "reranking"}[method]
	return fmt.Errorf("%w: the signal aborted the %s %s", ErrAborted, what, when)
}

// fieldOf names an invalid text as JavaScript passed it: the engine calls
// the only text of a one-element list "input", which the caller wrote as
// input[0] when they passed an array.
func (r *embedRequest) fieldOf(err error) error {
	var oe *engine.OptionError
	if !r.listed || len(r.texts) != 1 || !errors.As(err, &oe) || oe.Field != r.listField {
		return err
	}
	named := *oe
	named.Field = r.listField + "[0]"
	return &named
}

// embeddingsValue is what embed resolves to: {vectors, dimensions, tokens,
// truncated, usage}. vectors is a Uint8Array of the embeddings one after
// the other, each dimensions little-endian float32 values (WebAssembly
// memory's order, copied at once: a JavaScript number per value would take
// a call across the boundary each); tokens[i] and truncated[i] are input
// i's token count and whether truncate cut it.
func (b *Binding) embeddingsValue(embs []engine.Embedding, dim int) map[string]any {
	flat := make([]float32, 0, len(embs)*dim)
	tokens := make([]any, len(embs))
	truncated := make([]any, len(embs))
	total := 0
	for i, e := range embs {
		flat = append(flat, e.Vector...)
		tokens[i], truncated[i] = e.Tokens, e.Truncated
		total += e.Tokens
	}
	vectors := b.uint8Array.New(4 * len(flat))
	js.CopyBytesToJS(vectors, floatBytes(flat))
	return map[string]any{
		"vectors": vectors, "dimensions": dim, "tokens": tokens, "truncated": truncated,
		"usage": map[string]any{"promptTokens": total, "totalTokens": total},
	}
}

// scoresValue is what rerank resolves to: {scores, tokens, truncated,
// usage}, the documents in the order given; scores[i] is the reranker's
// raw score (a logit, as llama.cpp's server reports it).
func scoresValue(scores []engine.Score) map[string]any {
	values := make([]any, len(scores))
	tokens := make([]any, len(scores))
	truncated := make([]any, len(scores))
	total := 0
	for i, s := range scores {
		values[i], tokens[i], truncated[i] = float64(s.Value), s.Tokens, s.Truncated
		total += s.Tokens
	}
	return map[string]any{
		"scores": values, "tokens": tokens, "truncated": truncated,
		"usage": map[string]any{"promptTokens": total, "totalTokens": total},
	}
}

// yieldingContext hands control to the JavaScript event loop (at most
// every promptYieldInterval) when the engine asks whether it was
// cancelled, which it does between passes: the page's abort message then
// arrives during a long embed or rerank, as it does between a
// generation's tokens (the engine's Embed has no progress callback to
// yield in).
type yieldingContext struct {
	context.Context
	y    *yielder
	last time.Time
	hook func(n int) // Binding.passHook
	n    int         // the yields so far
}

// Err yields, if promptYieldInterval has passed since the last yield,
// then reports whether the context is done.
func (c *yieldingContext) Err() error {
	if time.Since(c.last) >= promptYieldInterval {
		c.y.yield()
		c.last = time.Now()
		if c.n++; c.hook != nil {
			c.hook(c.n)
		}
	}
	return c.Context.Err()
}
