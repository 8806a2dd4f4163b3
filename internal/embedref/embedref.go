//go:build !js

// Package embedref asks llama.cpp for the reference of embedding models:
// the embeddings of texts or token ids, the scores of a reranker, and how
// many embeddings a second it computes. It runs node-llama-cpp (pinned in
// package.json: its prebuilt CPU build, one thread unless a TimeJob asks
// for more) in one Node.js process
// per Run, on GGUF files such as internal/modelgen's bert and nomic-bert
// models; a file llama.cpp refuses is that job's Error, which is how the
// tests prove modelgen writes what real converted files hold.
//
// What node-llama-cpp 3.21.1 does, read from its source and checked by
// this package's tests:
//
//   - getEmbeddingFor tokenizes a text without special tokens, then puts
//     the vocabulary's BOS before it unless it is already first and its
//     SEP after it unless it is already last (for BERT's WordPiece
//     vocabulary, [CLS] 101 and [SEP] 102); token ids get the same. The
//     vector is llama.cpp's pooled embedding exactly as
//     llama_get_embeddings_seq gives it, pooled as the file's
//     pooling_type says (the context asks for no pooling of its own), and
//     not normalized: a caller that wants unit vectors normalizes them.
//   - rank(query, document) and rankAll evaluate [BOS] query [EOS] [SEP]
//     document [EOS], each special token where the vocabulary has one —
//     for a BERT vocabulary, which has no EOS, [CLS] query [SEP] document,
//     with no closing [SEP] — in a context whose pooling is rank (the CLS
//     token's state through the classifier head), and return the sigmoid
//     of llama.cpp's first classifier output (but for qwen3, whose
//     llama.cpp graph already applies a softmax); Rank.Raw is that output.
//   - token types are not inputs: llama.cpp adds row 0 of token_types
//     ("sentence A") to every position, the document's too.
//
// It runs Node.js, so it is test machinery for native builds only, like
// internal/llamacppref.
package embedref

import (
	"fmt"
	"testing"

	"github.com/wasmlm/wasmlm/internal/llamacppref"
)

// script is the Node.js program, relative to the module's root, where
// node_modules is.
const script = "internal/embedref/embedref.mjs"

// Runner runs llama.cpp through node-llama-cpp.
type Runner struct{ node llamacppref.Node }

// Need returns a Runner when Node.js and the repository's node-llama-cpp
// (npm ci --omit=optional at the root; make test runs it) are installed.
// Otherwise it skips t, saying what is missing, or fails it in CI (the
// environment variable CI set), where both are installed.
func Need(t testing.TB) *Runner {
	t.Helper()
	return &Runner{node: llamacppref.NeedNode(t)}
}

// New returns a Runner outside a test (tools/benchrun): Node.js and the
// node-llama-cpp of the module whose go.mod is nearest above the working
// directory, or an error saying which is missing.
func New() (*Runner, error) {
	n, err := llamacppref.FindNode()
	if err != nil {
		return nil, err
	}
	return &Runner{node: n}, nil
}

// Input is one text to embed, or (Tokens set) token ids.
type Input struct {
	Text   string `json:"text,omitempty"`
	Tokens []int  `json:"tokens,omitempty"`
}

// Texts are inputs of the texts.
func Texts(texts ...string) []Input {
	in := make([]Input, len(texts))
	for i, t := range texts {
		in[i].Text = t
	}
	return in
}

// EmbedJob is inputs for llama.cpp to embed with one model.
type EmbedJob struct {
	Model  string  `json:"model"` // the GGUF file's path
	Inputs []Input `json:"inputs"`
	// ContextSize is the embedding context's size; 0 means the longest
	// input's ids and one more (node-llama-cpp wants a free cell), at most
	// the model's context length.
	ContextSize int `json:"context_size,omitempty"`
}

// EmbedResult is llama.cpp's embeddings of one job's inputs, or Error,
// why llama.cpp refused the model (or failed to run it).
type EmbedResult struct {
	Error        string `json:"error"`
	Architecture string `json:"architecture"` // general.architecture
	// PoolingType is the file's pooling_type (0 none, 1 mean, 2 cls, 3
	// last, 4 rank), -1 when it has none.
	PoolingType int         `json:"pooling_type"`
	Embeddings  []Embedding `json:"embeddings"` // one per input
}

// Embedding is one input's embedding.
type Embedding struct {
	// Tokens are the ids llama.cpp evaluated: the text's, with [CLS]
	// before and [SEP] after where they were missing.
	Tokens []int `json:"tokens"`
	// Vector is the embedding as node-llama-cpp returns it: pooled, not
	// normalized.
	Vector []float64 `json:"vector"`
}

// RankJob is documents for a reranker to score against a query.
type RankJob struct {
	Model     string   `json:"model"`
	Query     string   `json:"query"`
	Documents []string `json:"documents"`
	// ContextSize is as EmbedJob's: 0 fits the longest sequence.
	ContextSize int `json:"context_size,omitempty"`
}

// RankResult is llama.cpp's scores of one job's documents, or Error.
type RankResult struct {
	Error string `json:"error"`
	Ranks []Rank `json:"ranks"` // one per document
}

// Rank is one (query, document) pair's scores.
type Rank struct {
	// Tokens are the sequence node-llama-cpp evaluates (for BERT:
	// [CLS] query [SEP] document).
	Tokens []int `json:"tokens"`
	// Raw are llama.cpp's classifier outputs (n_cls_out of them):
	// Raw[0] is the reranker's score before any sigmoid.
	Raw []float64 `json:"raw"`
	// Score is what rank(query, document) returns, ScoreAll what rankAll
	// returns for the document: both the sigmoid of Raw[0].
	Score    float64 `json:"score"`
	ScoreAll float64 `json:"score_all"`
}

// Modes of a TimeJob.
const (
	// Sequences evaluates a round's inputs together: one context of Batch
	// sequences whose batch holds them all, one llama.cpp encode.
	Sequences = "sequences"
	// Sequential embeds them one after the other with getEmbeddingFor (a
	// node-llama-cpp embedding context has one sequence).
	Sequential = "sequential"
)

// TimeJob measures llama.cpp's embedding speed: Repeats rounds, after
// rounds to warm up, of Batch inputs of Tokens ids each ([CLS], Tokens-2
// word pieces, [SEP]; at least 3), in Mode (Sequences when empty).
type TimeJob struct {
	Model   string `json:"model"`
	Tokens  int    `json:"tokens"`
	Batch   int    `json:"batch"`
	Repeats int    `json:"repeats"`
	Mode    string `json:"mode,omitempty"`
	// Texts, when set, are the inputs (Batch of them): tokenized as
	// getEmbeddingFor tokenizes a text, [CLS] and [SEP] added; each must
	// come to Tokens ids, or the job fails saying which does not. Without
	// them the inputs are ids spread over BERT's word pieces.
	Texts []string `json:"texts,omitempty"`
	// Threads is llama.cpp's thread count (0: 1).
	Threads int `json:"threads,omitempty"`
	// WarmupMS: the rounds to warm up go on until this long has passed
	// (at least one round).
	WarmupMS int `json:"warmup_ms,omitempty"`
}

// TimeResult is one TimeJob's wall times, measured in Node, or Error.
type TimeResult struct {
	Error   string    `json:"error"`
	Seconds []float64 `json:"seconds"` // each round's
	// Tokens are each input's ids, Threads the context's threads
	// (node-llama-cpp's currentThreads), WarmupRounds the rounds before
	// the measured ones.
	Tokens       int `json:"tokens"`
	Threads      int `json:"threads"`
	WarmupRounds int `json:"warmup_rounds"`
}

// PerSecond is the embeddings a second of the rounds of job: Batch per
// round over the mean round.
func (r TimeResult) PerSecond(job TimeJob) float64 {
	total := 0.0
	for _, s := range r.Seconds {
		total += s
	}
	if total <= 0 {
		return 0
	}
	return float64(job.Batch*len(r.Seconds)) / total
}

// Request is the jobs of one Run.
type Request struct {
	Embed []EmbedJob `json:"embed,omitempty"`
	Rank  []RankJob  `json:"rank,omitempty"`
	Time  []TimeJob  `json:"time,omitempty"`
}

// Response is a Run's results, one per job of its Request, in order.
type Response struct {
	Embed []EmbedResult `json:"embed"`
	Rank  []RankResult  `json:"rank"`
	Time  []TimeResult  `json:"time"`
}

// Run runs every job of req in one Node.js process. An error is the
// process's failure or a malformed request; a model llama.cpp refuses is
// its result's Error.
func (r *Runner) Run(req Request) (*Response, error) {
	for _, j := range req.Time {
		if j.Tokens < 3 || j.Batch < 1 || j.Repeats < 1 || (j.Mode != "" && j.Mode != Sequences && j.Mode != Sequential) ||
			j.Texts != nil && len(j.Texts) != j.Batch || j.Threads < 0 || j.WarmupMS < 0 {
			return nil, fmt.Errorf("embedref: time job %+v: want Tokens >= 3, Batch and Repeats >= 1, Mode %q or %q, Batch texts if any, Threads and WarmupMS >= 0",
				j, Sequences, Sequential)
		}
	}
	var res Response
	if err := r.node.RunJSON(script, req, &res); err != nil {
		return nil, err
	}
	if len(res.Embed) != len(req.Embed) || len(res.Rank) != len(req.Rank) || len(res.Time) != len(req.Time) {
		return nil, fmt.Errorf("node %s: %d, %d and %d results for %d, %d and %d jobs", script,
			len(res.Embed), len(res.Rank), len(res.Time), len(req.Embed), len(req.Rank), len(req.Time))
	}
	for i, e := range res.Embed {
		if e.Error == "" && len(e.Embeddings) != len(req.Embed[i].Inputs) {
			return nil, fmt.Errorf("node %s: embed job %d: %d embeddings for %d inputs", script, i, len(e.Embeddings), len(req.Embed[i].Inputs))
		}
	}
	for i, rk := range res.Rank {
		if rk.Error == "" && len(rk.Ranks) != len(req.Rank[i].Documents) {
			return nil, fmt.Errorf("node %s: rank job %d: %d ranks for %d documents", script, i, len(rk.Ranks), len(req.Rank[i].Documents))
		}
	}
	return &res, nil
}
