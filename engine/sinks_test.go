package engine

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSoftmaxWithSink: the weights beside a sink are softmax's over the
// scaled scores and the (unscaled) sink, the sink's own weight left out,
// computed in float64 from the formula: they sum to 1 minus the sink's
// share, whether the sink is below the scores, among them or above them.
func TestSoftmaxWithSink(t *testing.T) {
	tests := []struct {
		name   string
		scores []float32
		scale  float32
		sink   float32
	}{
		{"sink below the scores", []float32{1, 2, 3}, 0.5, -4},
		{"sink among them", []float32{0.3, -1.2, 2.5, 0.7}, 0.25, 0.4},
		{"sink above them: it takes most of the weight", []float32{0.1, -0.2}, 1, 6},
		{"one position", []float32{-3}, 0.125, 1.5},
		{"unscaled", []float32{4, 4, -2}, 1, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := make([]float64, len(tt.scores))
			sum := math.Exp(float64(tt.sink))
			for i, s := range tt.scores {
				want[i] = math.Exp(float64(s) * float64(tt.scale))
				sum += want[i]
			}
			got := append([]float32(nil), tt.scores...)
			softmaxWithSink(got, tt.scale, tt.sink)
			total := 0.0
			for i := range want {
				assert.InDelta(t, want[i]/sum, got[i], 1e-6, "weight %d", i)
				total += float64(got[i])
			}
			assert.InDelta(t, 1-math.Exp(float64(tt.sink))/sum, total, 1e-6, "the positions' share")
		})
	}
}

// TestAttentionWeightsWithoutSinks: a layer without sinks keeps the plain
// softmax, whose weights sum to 1.
func TestAttentionWeightsWithoutSinks(t *testing.T) {
	x := []float32{0.5, -1, 2}
	plain := append([]float32(nil), x...)
	scaledSoftmax(plain, 0.5)
	attentionWeights(x, 0, 0.5, nil, 0)
	assert.Equal(t, plain, x)
	sinks := []float32{-100, 3}
	y := []float32{0.5, -1, 2}
	attentionWeights(y, 0, 0.5, sinks, 1)
	assert.Less(t, y[2], plain[2], "head 1's sink takes some of the weight")
}
