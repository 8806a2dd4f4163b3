package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/wasmlm/wasmlm/engine"
)

// constrainedRun is one generation of bench -json-schema or -grammar: the
// measured generation again, held to the grammar.
type constrainedRun struct {
	// Pass is "first" (the grammar just compiled: its token masks are built
	// as the generation meets each state) or "again" (the same grammar in
	// the next generation, as a model's grammar cache gives it for a
	// request that sends the same schema: the masks it met are kept).
	Pass                  string  `json:"pass"`
	GeneratedTokens       int     `json:"generated_tokens"`
	FinishReason          string  `json:"finish_reason"`
	TimeToFirstTokenMS    float64 `json:"time_to_first_token_ms"`
	DecodeMS              float64 `json:"decode_ms"`
	DecodeTokens          int     `json:"decode_tokens"`
	DecodeTokensPerSecond float64 `json:"decode_tokens_per_second"`
	// ValidJSON is whether the text parses as JSON (encoding/json.Valid);
	// only meaningful for a JSON grammar. Text is the text itself.
	ValidJSON bool   `json:"valid_json"`
	Text      string `json:"text"`
}

// formatFlags reads -json-schema FILE and -grammar FILE into the response
// format they ask for (the zero value: neither).
func formatFlags(schemaFile, grammarFile string) (engine.ResponseFormat, error) {
	var f engine.ResponseFormat
	switch {
	case schemaFile != "" && grammarFile != "":
		return f, fmt.Errorf("-json-schema and -grammar exclude each other")
	case schemaFile != "":
		data, err := os.ReadFile(schemaFile)
		if err != nil {
			return f, fmt.Errorf("-json-schema: %w", err)
		}
		if !json.Valid(data) {
			return f, fmt.Errorf("-json-schema %s: not JSON", schemaFile)
		}
		f.Type, f.Schema = engine.FormatJSONSchema, data
	case grammarFile != "":
		data, err := os.ReadFile(grammarFile)
		if err != nil {
			return f, fmt.Errorf("-grammar: %w", err)
		}
		f.Grammar = string(data)
	}
	return f, nil
}

// benchConstrained repeats the measured generation (opts, on a reset
// session) held to format's grammar, twice: compiled for the first run,
// from the model's grammar cache for the second. The end-of-generation
// tokens the unconstrained run bans are allowed again, since the grammar
// allows them only where the text is a whole match: a generation ends when
// its text is complete, at most opts.MaxTokens tokens in (the grammar's
// budget steers it to close in time).
func benchConstrained(ctx context.Context, model *engine.Model, s *engine.Session, prompt []int, opts engine.GenerateOptions, format engine.ResponseFormat) ([]constrainedRun, error) {
	sp := model.Tokenizer().Special()
	bias := map[int]float32{}
	for id, v := range opts.Sampling.LogitBias {
		if id != sp.EOS && id != sp.EOT {
			bias[id] = v
		}
	}
	opts.Sampling.LogitBias = bias
	var out []constrainedRun
	for _, pass := range []string{"first", "again"} {
		g, err := model.FormatGrammar(format)
		if err != nil {
			return out, err
		}
		opts.Grammar = g
		s.Reset()
		res, err := s.GenerateTokens(ctx, prompt, opts, nil)
		if err != nil {
			return out, fmt.Errorf("the generation held to the grammar (%s): %w", pass, err)
		}
		t := res.Timings
		out = append(out, constrainedRun{
			Pass: pass, GeneratedTokens: len(res.Tokens), FinishReason: string(res.FinishReason),
			TimeToFirstTokenMS: ms(t.TimeToFirstToken), DecodeMS: ms(t.Decode), DecodeTokens: t.DecodeTokens,
			DecodeTokensPerSecond: t.DecodeTokensPerSecond(),
			ValidJSON:             json.Valid([]byte(res.Text)), Text: res.Text,
		})
	}
	return out, nil
}
