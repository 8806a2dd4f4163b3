package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/grammar"
	"github.com/wasmlm/wasmlm/grammar/jsonschema"
	"github.com/wasmlm/wasmlm/policy"
)

// constrainedRun is one generation of bench -json-schema or -grammar's
// rounds: the measured generation again, without or held to the grammar.
type constrainedRun struct {
	Round int `json:"round"`
	// Pass is "without" (no grammar, as the measured run), "first" (the
	// grammar just compiled: its token masks are built as the generation
	// meets each state, a request's first use of a schema) or "again" (the
	// same grammar in the next generation, as a model's grammar cache gives
	// it for a request that sends the same schema: the masks it met are
	// kept).
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

// grammarSource is the GBNF source of -json-schema FILE (converted as a
// json_schema response format is) or -grammar FILE; "" without either.
func grammarSource(schemaFile, grammarFile string) (string, error) {
	switch {
	case schemaFile != "" && grammarFile != "":
		return "", fmt.Errorf("-json-schema and -grammar exclude each other")
	case schemaFile != "":
		data, err := os.ReadFile(schemaFile)
		if err != nil {
			return "", fmt.Errorf("-json-schema: %w", err)
		}
		src, err := jsonschema.ToGBNF(data)
		if err != nil {
			return "", fmt.Errorf("-json-schema %s: %w", schemaFile, err)
		}
		return src, nil
	case grammarFile != "":
		data, err := os.ReadFile(grammarFile)
		if err != nil {
			return "", fmt.Errorf("-grammar: %w", err)
		}
		if _, err := grammar.Parse(string(data)); err != nil {
			return "", fmt.Errorf("-grammar %s: %w", grammarFile, err)
		}
		return string(data), nil
	}
	return "", nil
}

// benchConstrained repeats the measured generation (opts, on a reset
// session) in rounds of three: without a grammar, held to src's grammar
// compiled for it ("first"), and held to the same grammar again. On a
// shared machine a round can be slowed by other work: the rounds let the
// harness take the best of each pass. The end-of-generation tokens the
// unconstrained run bans are allowed under the grammar, which allows them
// only where the text is a whole match: such a generation ends when its
// text is complete, at most opts.MaxTokens tokens in (the grammar's budget
// steers it to close in time).
func benchConstrained(ctx context.Context, model *engine.Model, s *engine.Session, prompt []int, opts engine.GenerateOptions, src string, rounds int) ([]constrainedRun, error) {
	sp := model.Tokenizer().Special()
	constrained := opts
	constrained.Sampling.LogitBias = map[int]float32{}
	for id, v := range opts.Sampling.LogitBias {
		if id != sp.EOS && id != sp.EOT {
			constrained.Sampling.LogitBias[id] = v
		}
	}
	grammars := policy.NewGrammars(model)
	var out []constrainedRun
	for round := range rounds {
		g, err := grammar.Parse(src)
		if err != nil {
			return out, err
		}
		constrained.Constraint = grammars.Bind(g)
		for _, pass := range []string{"without", "first", "again"} {
			o := constrained
			if pass == "without" {
				o = opts
			}
			s.Reset()
			res, err := s.GenerateTokens(ctx, prompt, o, nil)
			if err != nil {
				return out, fmt.Errorf("round %d, %s: %w", round, pass, err)
			}
			t := res.Timings
			out = append(out, constrainedRun{
				Round: round, Pass: pass, GeneratedTokens: len(res.Tokens), FinishReason: string(res.FinishReason),
				TimeToFirstTokenMS: ms(t.TimeToFirstToken), DecodeMS: ms(t.Decode), DecodeTokens: t.DecodeTokens,
				DecodeTokensPerSecond: t.DecodeTokensPerSecond(),
				ValidJSON:             json.Valid([]byte(res.Text)), Text: res.Text,
			})
		}
	}
	return out, nil
}
