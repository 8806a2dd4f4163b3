package sampling

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidateRejects(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	tests := []struct {
		name  string
		p     Params
		vocab int
		field string // must appear in the message
	}{
		{"vocab 0", Params{}, 0, "vocab_size"},
		{"vocab negative", Params{}, -5, "vocab_size"},
		{"vocab too large", Params{}, MaxVocabSize + 1, "vocab_size"},
		{"temperature negative", Params{Temperature: -0.1}, 10, "temperature"},
		{"temperature NaN", Params{Temperature: nan}, 10, "temperature"},
		{"temperature +Inf", Params{Temperature: inf}, 10, "temperature"},
		{"temperature -Inf", Params{Temperature: -inf}, 10, "temperature"},
		{"top_k -1", Params{TopK: -1}, 10, "top_k"},
		{"top_p -0.1", Params{TopP: -0.1}, 10, "top_p"},
		{"top_p 1.1", Params{TopP: 1.1}, 10, "top_p"},
		{"top_p NaN", Params{TopP: nan}, 10, "top_p"},
		{"top_p Inf", Params{TopP: inf}, 10, "top_p"},
		{"min_p -0.01", Params{MinP: -0.01}, 10, "min_p"},
		{"min_p 1.5", Params{MinP: 1.5}, 10, "min_p"},
		{"min_p NaN", Params{MinP: nan}, 10, "min_p"},
		{"repeat_penalty negative", Params{RepeatPenalty: -1}, 10, "repeat_penalty"},
		{"repeat_penalty NaN", Params{RepeatPenalty: nan}, 10, "repeat_penalty"},
		{"repeat_penalty Inf", Params{RepeatPenalty: inf}, 10, "repeat_penalty"},
		{"presence_penalty 2.5", Params{PresencePenalty: 2.5}, 10, "presence_penalty"},
		{"presence_penalty -2.01", Params{PresencePenalty: -2.01}, 10, "presence_penalty"},
		{"presence_penalty NaN", Params{PresencePenalty: nan}, 10, "presence_penalty"},
		{"frequency_penalty 3", Params{FrequencyPenalty: 3}, 10, "frequency_penalty"},
		{"frequency_penalty -Inf", Params{FrequencyPenalty: -inf}, 10, "frequency_penalty"},
		{"frequency_penalty NaN", Params{FrequencyPenalty: nan}, 10, "frequency_penalty"},
		{"penalty_last_n -2", Params{PenaltyLastN: -2}, 10, "penalty_last_n"},
		{"logit_bias id = vocab", Params{LogitBias: map[int]float32{10: 1}}, 10, "logit_bias.10"},
		{"logit_bias id negative", Params{LogitBias: map[int]float32{-1: 1}}, 10, "logit_bias.-1"},
		{"logit_bias NaN", Params{LogitBias: map[int]float32{3: nan}}, 10, "logit_bias.3"},
		{"logit_bias +Inf", Params{LogitBias: map[int]float32{4: inf}}, 10, "logit_bias.4"},
		{"logit_bias lowest offender named", Params{LogitBias: map[int]float32{9: nan, 2: 1, 7: nan, 12: 0}}, 10, "logit_bias.7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate(tt.vocab)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidParams)
			assert.Contains(t, err.Error(), tt.field)
			s, err := New(tt.p, tt.vocab)
			assert.Nil(t, s)
			assert.ErrorIs(t, err, ErrInvalidParams)
		})
	}
}

func TestValidateAcceptsEdges(t *testing.T) {
	negInf := float32(math.Inf(-1))
	tests := []struct {
		name string
		p    Params
	}{
		{"zero value", Params{}},
		{"temperature tiny", Params{Temperature: math.SmallestNonzeroFloat32}},
		{"temperature huge", Params{Temperature: math.MaxFloat32}},
		{"top_k above vocab", Params{TopK: 1 << 40}},
		{"top_p 0", Params{TopP: 0}},
		{"top_p 1", Params{TopP: 1}},
		{"min_p 1", Params{MinP: 1}},
		{"repeat_penalty 0", Params{RepeatPenalty: 0}},
		{"repeat_penalty 1", Params{RepeatPenalty: 1}},
		{"repeat_penalty below 1", Params{RepeatPenalty: 0.5}},
		{"repeat_penalty huge", Params{RepeatPenalty: math.MaxFloat32}},
		{"penalties at bounds", Params{PresencePenalty: -2, FrequencyPenalty: 2}},
		{"penalties at other bounds", Params{PresencePenalty: 2, FrequencyPenalty: -2}},
		{"penalty_last_n -1", Params{PenaltyLastN: -1}},
		{"penalty_last_n huge", Params{PenaltyLastN: 1 << 50}},
		{"logit_bias edges", Params{LogitBias: map[int]float32{0: negInf, 9: math.MaxFloat32, 5: -math.MaxFloat32}}},
		{"seed max", Params{Seed: math.MaxUint64}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, tt.p.Validate(10))
			s, err := New(tt.p, 10)
			require.NoError(t, err)
			id := s.Sample([]float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
			assert.True(t, id >= 0 && id < 10)
		})
	}
}
