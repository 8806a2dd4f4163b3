package engine

import "github.com/wasmlm/wasmlm/internal/fmath"

// gpt-oss's experts gate their units with a clamped SwiGLU (OpenAI's
// "swiglu" with alpha 1.702 and limit 7; llama.cpp's ggml_swiglu_oai):
//
//	x = min(gate, limit), y = clamp(up, -limit, limit)
//	out = x·σ(alpha·x) · (y + 1)
//
// computed as ggml's CPU backend does, in float32: x / (1 + e^(alpha·(−x)))
// · (y + 1).

// The constants llama.cpp's build_moe_ffn gives ggml_swiglu_oai.
const (
	swigluOAIAlpha = 1.702
	swigluOAILimit = 7
)

// swigluOAI sets gate = swiglu_oai(gate, up), element by element.
func swigluOAI(gate, up []float32) {
	up = up[:len(gate)]
	for i, g := range gate {
		x := min(g, swigluOAILimit)
		y := min(max(up[i], -swigluOAILimit), swigluOAILimit)
		glu := x / (1 + fmath.Exp(float32(swigluOAIAlpha*-x)))
		gate[i] = glu * (y + 1)
	}
}
