package sampling

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// referenceDraws is testdata/reference_draws.json, written by
// testdata/reference_draws.py: an independent Python implementation of the
// chain and PRNG as the package comment specifies them.
type referenceDraws struct {
	Vocab  int   `json:"vocab"`
	Prompt []int `json:"prompt"`
	Cases  []struct {
		Name   string `json:"name"`
		Params struct {
			Temperature      float32  `json:"temperature"`
			TopK             int      `json:"top_k"`
			TopP             float32  `json:"top_p"`
			MinP             float32  `json:"min_p"`
			RepeatPenalty    float32  `json:"repeat_penalty"`
			PresencePenalty  float32  `json:"presence_penalty"`
			FrequencyPenalty float32  `json:"frequency_penalty"`
			PenaltyLastN     int      `json:"penalty_last_n"`
			LogitBias        [][2]any `json:"logit_bias"`
			Seed             uint64   `json:"seed"`
		} `json:"params"`
		Steps []struct {
			Logits []float32 `json:"logits"`
			ID     int       `json:"id"`
		} `json:"steps"`
	} `json:"cases"`
}

// TestReferenceDraws replays the Python reference: the prompt is accepted,
// then at each step Sample must return the reference's id, which is accepted
// in turn. This shows the package comment is enough to reproduce the
// sampler, and, run under wasm, that both platforms pick the same ids.
func TestReferenceDraws(t *testing.T) {
	b, err := os.ReadFile("testdata/reference_draws.json")
	require.NoError(t, err)
	var ref referenceDraws
	require.NoError(t, json.Unmarshal(b, &ref))
	require.NotEmpty(t, ref.Cases)
	for _, c := range ref.Cases {
		t.Run(c.Name, func(t *testing.T) {
			rp := c.Params
			p := Params{
				Temperature: rp.Temperature, TopK: rp.TopK, TopP: rp.TopP, MinP: rp.MinP,
				RepeatPenalty: rp.RepeatPenalty, PresencePenalty: rp.PresencePenalty,
				FrequencyPenalty: rp.FrequencyPenalty, PenaltyLastN: rp.PenaltyLastN, Seed: rp.Seed,
			}
			for _, kv := range rp.LogitBias {
				if p.LogitBias == nil {
					p.LogitBias = map[int]float32{}
				}
				id := int(kv[0].(float64))
				switch v := kv[1].(type) {
				case float64:
					p.LogitBias[id] = float32(v)
				case string:
					require.Equal(t, "-inf", v)
					p.LogitBias[id] = float32(math.Inf(-1))
				}
			}
			s := mustNew(t, p, ref.Vocab)
			for _, id := range ref.Prompt {
				s.Accept(id)
			}
			got := make([]int, len(c.Steps))
			want := make([]int, len(c.Steps))
			for i, step := range c.Steps {
				require.Len(t, step.Logits, ref.Vocab)
				got[i] = s.Sample(step.Logits)
				want[i] = step.ID
				s.Accept(step.ID)
			}
			assert.Equal(t, want, got)
		})
	}
}
