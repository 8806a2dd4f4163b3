package engine

import (
	"context"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/tokenizer"
)

// Embeddings: a text's vector, pooled from the final states of its tokens
// as the model's file says (pooling_type), L2-normalised unless asked not
// to be; and reranking, a cross-encoder's score of a (query, document)
// pair. Encoders (bert, nomic-bert: encoder.go) do both; a decoder (llama,
// qwen3, …) embeds from its final states after the output norm, its
// attention causal as when it generates.

// Pooling is how an embedding model turns the final states of a text's
// tokens into one vector: GGUF's <arch>.pooling_type, as llama.cpp numbers
// it.
type Pooling int

// The pooling types.
const (
	// PoolingUnset: the file does not say (or says none, llama.cpp's
	// per-token output, which has no single vector): the engine means a
	// decoder's states, except qwen3's (Qwen3-Embedding), whose last
	// token's state is its embedding, and an encoder's.
	PoolingUnset Pooling = 0
	PoolingMean  Pooling = 1 // the mean of every token's state
	PoolingCLS   Pooling = 2 // the first token's ([CLS]) state
	PoolingLast  Pooling = 3 // the last token's state
	// PoolingRank: a reranker; the first token's state through the
	// classification head gives a score per class (Session.Rerank).
	PoolingRank Pooling = 4
)

// String is the pooling's name: "mean", "cls", "last", "rank" ("unset").
func (p Pooling) String() string {
	switch p {
	case PoolingMean:
		return "mean"
	case PoolingCLS:
		return "cls"
	case PoolingLast:
		return "last"
	case PoolingRank:
		return "rank"
	}
	return "unset"
}

// readEmbeddingKeys reads what embedding needs of any family's file: its
// pooling, whether its attention is causal, and a classifier's outputs.
func readEmbeddingKeys(f *gguf.File, a *architecture, c *Config) error {
	p, err := uint32Key(f, a.name+".pooling_type", 0)
	if err != nil {
		return err
	}
	if p > int(PoolingRank) {
		return fmt.Errorf("%w: %s.pooling_type %d (supported: 0 none, 1 mean, 2 cls, 3 last, 4 rank)", ErrUnsupported, a.name, p)
	}
	c.Pooling = Pooling(p)
	causal, err := f.BoolOr(a.name+".attention.causal", true)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrFormat, err)
	}
	c.NonCausal = !causal
	if c.NonCausal && !a.encoder {
		return fmt.Errorf("%w: a %s model whose attention is not causal (%s.attention.causal = false)", ErrUnsupported, a.name, a.name)
	}
	c.Classes = 1
	if labels, err := f.Strings(a.name + ".classifier.output_labels"); err == nil && len(labels) > 0 {
		c.Classes = len(labels)
	}
	if c.Pooling == PoolingRank && !a.encoder {
		return fmt.Errorf("%w: a %s reranker (pooling_type rank): reranking is for encoders (bert)", ErrUnsupported, a.name)
	}
	return nil
}

// Generates reports whether the model generates text; an encoder (bert,
// nomic-bert) only embeds or ranks it.
func (m *Model) Generates() bool { return !m.arch.encoder }

// errEncoder is the error of asking an encoder to generate.
func errEncoder(m *Model) error {
	if m.Reranks() {
		return fmt.Errorf("%w: this %s model is a reranker: it ranks documents against a query and does not generate text", ErrUnsupported, m.arch.name)
	}
	return fmt.Errorf("%w: this %s model is an embedding model: it embeds text and does not generate it", ErrUnsupported, m.arch.name)
}

// Pooling is how Embed pools the model's states (PoolingUnset resolved):
// PoolingRank for a reranker, which Embed refuses.
func (m *Model) Pooling() Pooling { return m.config.pooling(m.arch) }

// pooling is Model.Pooling for a model of family a.
func (c Config) pooling(a *architecture) Pooling {
	switch {
	case c.Pooling != PoolingUnset:
		return c.Pooling
	case a.name == "qwen3":
		return PoolingLast
	}
	return PoolingMean
}

// Reranks reports whether the model scores (query, document) pairs
// (Rerank): an encoder with a classification head and pooling_type rank.
func (m *Model) Reranks() bool {
	return m.config.Pooling == PoolingRank && m.weights.ClsOut != nil
}

// whatItDoes fills in what Info says of a model of family a that does or
// not have a classification head.
func (info *Info) whatItDoes(a *architecture, c Config, head bool) {
	info.Pooling, info.Generates, info.TokenTypes = c.pooling(a).String(), !a.encoder, c.TokenTypes
	if info.Reranks = c.Pooling == PoolingRank && head; info.Reranks {
		info.Classes = c.Classes
	}
}

// EmbeddingLength is the length of the model's embeddings: its width.
func (m *Model) EmbeddingLength() int { return m.config.Dim }

// MaxEmbedInputs bounds the texts of one Embed call (OpenAI's limit for
// /v1/embeddings) and the documents of one Rerank call.
const MaxEmbedInputs = 2048

// EmbedOptions configure Embed and Rerank. The zero value refuses a text
// longer than the session's context and normalises each embedding to unit
// length.
type EmbedOptions struct {
	// Truncate cuts a text longer than the session's context to fit, its
	// special tokens kept (a document, for Rerank), rather than failing
	// with ErrPromptTooLong.
	Truncate bool
	// Raw leaves each embedding as pooled, not scaled to unit length.
	Raw bool
}

// Embedding is one text's embedding.
type Embedding struct {
	Vector    []float32 // EmbeddingLength values
	Tokens    int       // the tokens evaluated, special tokens included
	Truncated bool      // the text was cut to fit the context (EmbedOptions.Truncate)
}

// Score is a reranker's score of one document for a query: the first of
// its classification head's outputs, as llama.cpp's server reports it
// (a logit: higher is more relevant).
type Score struct {
	Value     float32
	Tokens    int  // the tokens of the pair, special tokens included
	Truncated bool // the document was cut to fit the context
}

// Embed returns the embedding of each text, in order: tokenized with the
// model's special tokens ([CLS] … [SEP] for BERT, BOS for llama), run
// through the model, pooled (Model.Pooling) and, unless opts.Raw, scaled
// to unit length. An encoder evaluates several texts in one pass. A text
// must be valid UTF-8 and not empty; one longer than the session's context
// fails with ErrPromptTooLong unless opts.Truncate. A cancelled ctx stops
// it between passes (a decoder's: between prompt blocks) with ctx's
// error. A reranker's model refuses (see Rerank); so does a part of a
// split model.
func (s *Session) Embed(ctx context.Context, texts []string, opts EmbedOptions) ([]Embedding, error) {
	if err := s.checkEmbed(len(texts), "input"); err != nil {
		return nil, err
	}
	if s.model.config.Pooling == PoolingRank {
		return nil, fmt.Errorf("%w: this model is a reranker (pooling_type rank): it scores (query, document) pairs rather than embedding texts", ErrUnsupported)
	}
	seqs := make([][]int, len(texts))
	out := make([]Embedding, len(texts))
	for i, text := range texts {
		field := fmt.Sprintf("input[%d]", i)
		if len(texts) == 1 {
			field = "input"
		}
		ids, cut, err := s.tokenizeForEmbedding(field, text, opts.Truncate)
		if err != nil {
			return nil, err
		}
		seqs[i], out[i].Tokens, out[i].Truncated = ids, len(ids), cut
	}
	if !s.mu.TryLock() {
		return nil, ErrBusy
	}
	defer s.mu.Unlock()
	vecs, err := s.embedTokens(ctx, seqs)
	if err != nil {
		return nil, err
	}
	for i, v := range vecs {
		if !opts.Raw {
			normalizeL2(v)
		}
		out[i].Vector = v
	}
	return out, nil
}

// Rerank scores each document against query with a reranker (Model.Reranks),
// in order: the pair tokenized as llama.cpp's server does (BERT: [CLS]
// query [SEP] document [SEP]), run through the model, its first token's
// state through the classification head. A pair longer than the session's
// context fails with ErrPromptTooLong unless opts.Truncate, which cuts the
// document (opts.Raw does not apply).
func (s *Session) Rerank(ctx context.Context, query string, documents []string, opts EmbedOptions) ([]Score, error) {
	if err := s.checkEmbed(len(documents), "documents"); err != nil {
		return nil, err
	}
	if !s.model.Reranks() {
		return nil, fmt.Errorf("%w: this model does not rerank: reranking needs an encoder with a classification head (pooling_type rank, as llama.cpp converts a BERT cross-encoder)", ErrUnsupported)
	}
	q, err := s.textTokens("query", query)
	if err != nil {
		return nil, err
	}
	head, tail := s.model.rerankFrame(q)
	if len(head)+len(tail) > s.context {
		return nil, fmt.Errorf("%w: the query takes %d tokens with the pair's special tokens; the context holds %d", ErrPromptTooLong, len(head)+len(tail), s.context)
	}
	seqs := make([][]int, len(documents))
	out := make([]Score, len(documents))
	for i, doc := range documents {
		d, err := s.textTokens(fmt.Sprintf("documents[%d]", i), doc)
		if err != nil {
			return nil, err
		}
		if room := s.context - len(head) - len(tail); len(d) > room {
			if !opts.Truncate {
				return nil, fmt.Errorf("%w: documents[%d] with the query takes %d tokens; the context holds %d (truncate cuts the document)", ErrPromptTooLong, i, len(head)+len(d)+len(tail), s.context)
			}
			d, out[i].Truncated = d[:room], true
		}
		seq := append(append(append(make([]int, 0, len(head)+len(d)+len(tail)), head...), d...), tail...)
		seqs[i], out[i].Tokens = seq, len(seq)
	}
	if !s.mu.TryLock() {
		return nil, ErrBusy
	}
	defer s.mu.Unlock()
	scores, err := s.embedTokens(ctx, seqs)
	if err != nil {
		return nil, err
	}
	for i, v := range scores {
		out[i].Value = v[0]
	}
	return out, nil
}

// rerankFrame is what goes around a document in a (query, document) pair:
// what llama.cpp's format_rerank builds for the vocabulary's flags — BOS,
// the query q, EOS (SEP without one), SEP, then the document, then EOS.
func (m *Model) rerankFrame(q []int) (head, tail []int) {
	sp := m.tokenizer.Special()
	end := sp.EOS
	if end < 0 {
		end = sp.SEP
	}
	if sp.AddBOS && sp.BOS >= 0 {
		head = append(head, sp.BOS)
	}
	head = append(head, q...)
	if sp.AddEOS && end >= 0 {
		head = append(head, end)
	}
	if sp.AddSEP && sp.SEP >= 0 {
		head = append(head, sp.SEP)
	}
	if sp.AddEOS && end >= 0 {
		tail = append(tail, end)
	}
	return head, tail
}

// RerankSpecialTokens is how many special tokens Rerank adds to a query's
// and a document's own tokens to make their pair, so that a host can count
// a rerank's tokens (the pair's: query + document + these) before it runs.
func (m *Model) RerankSpecialTokens() int {
	head, tail := m.rerankFrame(nil)
	return len(head) + len(tail)
}

// checkEmbed checks what Embed and Rerank share: n inputs, the list named
// field, within bounds, for a whole model.
func (s *Session) checkEmbed(n int, field string) error {
	switch {
	case n == 0:
		return optionError(field, "must not be empty")
	case n > MaxEmbedInputs:
		return optionError(field, "must have at most %d elements, got %d", MaxEmbedInputs, n)
	case s.model.part != nil:
		return fmt.Errorf("%w: embeddings need a whole model, not a part of a split one", ErrUnsupported)
	}
	return nil
}

// textTokens tokenizes a text of the input named field without special
// tokens; an empty text is an error.
func (s *Session) textTokens(field, text string) ([]int, error) {
	if text == "" {
		return nil, optionError(field, "must not be an empty string")
	}
	if !utf8.ValidString(text) {
		return nil, optionError(field, "is not valid UTF-8")
	}
	ids, err := s.model.tokenizer.Encode(text, tokenizer.EncodeOptions{})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return ids, nil
}

// tokenizeForEmbedding tokenizes a text to embed, with the vocabulary's
// special tokens, cut to the session's context when truncate allows
// (reporting whether it was); an empty text is an error.
func (s *Session) tokenizeForEmbedding(field, text string, truncate bool) (ids []int, cut bool, err error) {
	body, err := s.textTokens(field, text)
	if err != nil {
		return nil, false, err
	}
	// The special tokens the vocabulary adds around the text (BERT's
	// [CLS] … [SEP], llama's BOS): what encoding with them adds.
	full, err := s.model.tokenizer.Encode(text, tokenizer.EncodeOptions{AddSpecial: true})
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", field, err)
	}
	h := 0
	for h+len(body) < len(full) && !slices.Equal(full[h:h+len(body)], body) {
		h++
	}
	head, tail := full[:h], full[min(h+len(body), len(full)):]
	if room := s.context - len(head) - len(tail); len(body) > room {
		if !truncate || room <= 0 {
			return nil, false, fmt.Errorf("%w: %s is %d tokens with its special tokens; the context holds %d (truncate cuts it to fit)", ErrPromptTooLong, field, len(head)+len(body)+len(tail), s.context)
		}
		body, cut = body[:room], true
	}
	ids = append(append(append(make([]int, 0, len(head)+len(body)+len(tail)), head...), body...), tail...)
	if len(ids) == 0 {
		return nil, false, fmt.Errorf("%w: %s has no tokens", ErrEmptyPrompt, field)
	}
	return ids, cut, nil
}

// embedTokens runs each sequence (at most the session's context long)
// through the model and pools its states as Model.Pooling says (a
// reranker: its classification head's scores), checking ctx before each
// prompt block of a decoder's text, as a generation's prompt does, and
// before each pass of an encoder. The session's lock is held.
func (s *Session) embedTokens(ctx context.Context, seqs [][]int) ([][]float32, error) {
	if s.model.arch.encoder {
		return s.encodeAll(ctx, seqs)
	}
	pooling := s.model.Pooling()
	c, w := &s.model.config, s.model.weights
	out := make([][]float32, len(seqs))
	norm := make([]float32, c.Dim)
	defer func() { s.hidden, s.tokens = nil, s.tokens[:0] }()
	for i, seq := range seqs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		pooled := make([]float32, c.Dim)
		at := 0
		s.hidden = func(x []float32) {
			defer func() { at++ }()
			if pooling == PoolingCLS && at > 0 || pooling == PoolingLast && at < len(seq)-1 {
				return
			}
			rmsNorm(norm, x, w.OutputNorm, c.NormEps)
			if pooling != PoolingMean {
				copy(pooled, norm)
				return
			}
			addInto(pooled, norm)
		}
		s.tokens = s.tokens[:0]
		for pos := 0; pos < len(seq); {
			if pos > 0 { // asked before the text's first block above
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			n := min(s.promptBlock, len(seq)-pos)
			if err := s.forwardBlock(seq[pos:pos+n], pos, false); err != nil {
				return nil, err
			}
			pos += n
		}
		if pooling == PoolingMean {
			scaleInto(pooled, 1/float32(len(seq)))
		}
		out[i] = pooled
	}
	return out, nil
}

// normalizeL2 scales v to unit length (a zero vector stays zero), as
// llama.cpp's common_embd_normalize does: the sum of squares in float64.
func normalizeL2(v []float32) {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum <= 0 {
		return
	}
	scale := float32(1 / math.Sqrt(sum))
	for i := range v {
		v[i] *= scale
	}
}
