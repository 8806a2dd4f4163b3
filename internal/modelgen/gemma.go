package modelgen

import (
	"fmt"
	"math"

	"github.com/wasmlm/wasmlm/engine/gguf"
)

// Gemma 2 and Gemma 3 (text) files, as llama.cpp's converter
// (convert_hf_to_gguf.py: Gemma2Model, Gemma3Model) writes them:
// attention.key_length and value_length always; gemma2 its
// attn_logit_softcapping, final_logit_softcapping and
// attention.sliding_window but no rope.freq_base (its models' is
// llama.cpp's default, 10000); gemma3 rope.freq_base (the global layers'),
// attention.sliding_window, and final_logit_softcapping only when the
// model has one (Gemma 3 has none). Every layer has, besides the llama
// family's tensors, blk.N.post_attention_norm and blk.N.post_ffw_norm;
// gemma3's have the q and k norms of qwen3 too. Norm weights are drawn
// around 1, as the converter writes them (it adds 1 to Gemma's weights,
// which its RMSNorm multiplies by 1 + w). The output is the token
// embedding: always for gemma2 (llama.cpp reads no output.weight for it),
// unless SeparateOutput for gemma3.

// The real models' values, for a gemma Spec's zero Family fields.
const (
	gemma2Window      = 4096
	gemma3Window      = 512
	gemma2AttnSoftCap = 50
	gemma2FinalCap    = 30
	gemma3RopeTheta   = 1_000_000 // Gemma 3's global layers'
)

// gemmaDefaults fills in a gemma spec's zero window and soft-caps, and gemma3's
// rope base, Gemma 3's 1e6 (its sliding layers' is llama.cpp's own 10000).
func (s Spec) gemmaDefaults() Spec {
	switch s.Arch {
	case "gemma2":
		if s.SlidingWindow == 0 {
			s.SlidingWindow = gemma2Window
		}
		if s.AttnSoftCap == 0 {
			s.AttnSoftCap = gemma2AttnSoftCap
		}
		if s.FinalSoftCap == 0 {
			s.FinalSoftCap = gemma2FinalCap
		}
	case "gemma3", "gemma4", "gemma3n":
		if s.SlidingWindow == 0 {
			s.SlidingWindow = gemma3Window
		}
		if s.RopeTheta == 0 {
			s.RopeTheta = gemma3RopeTheta
		}
	}
	return s
}

// validateGemma checks the gemma families' Family fields (defaults filled
// in).
func (s Spec) validateGemma() error {
	gemma := s.Arch == "gemma2" || s.Arch == "gemma3" || s.Arch == "gemma4" || s.Arch == "gemma3n"
	switch {
	case !gemma && (s.AttnSoftCap != 0 || s.FinalSoftCap != 0 || (s.SlidingWindow != 0 && s.Arch != "phi3" && s.Arch != gptOSSArch)):
		return fmt.Errorf("%w: %s has no sliding window or soft-capping (they are gemma2's and gemma3's, and phi3 and gpt-oss say their window)", ErrSpec, s.Arch)
	case !gemma:
		return nil
	case s.Arch == "gemma2" && s.SeparateOutput:
		return fmt.Errorf("%w: gemma2's output is its token embedding: llama.cpp reads no output.weight", ErrSpec)
	case s.Arch != "gemma2" && s.AttnSoftCap != 0:
		return fmt.Errorf("%w: %s has no attention soft-capping", ErrSpec, s.Arch)
	case s.SlidingWindow < 0 || s.SlidingWindow > maxElements:
		return fmt.Errorf("%w: SlidingWindow is %d, want 0..%d", ErrSpec, s.SlidingWindow, maxElements)
	}
	for _, v := range []float32{s.AttnSoftCap, s.FinalSoftCap} {
		if !(v >= 0) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("%w: soft-caps %v and %v must be finite and positive (0: the model's)", ErrSpec, s.AttnSoftCap, s.FinalSoftCap)
		}
	}
	return nil
}

// gemmaMetadata writes the gemma families' keys.
func (g *generator) gemmaMetadata() {
	sp, b := g.sp, g.b
	key := func(k string) string { return sp.Arch + "." + k }
	switch sp.Arch {
	case "gemma2":
		b.Set(key("attn_logit_softcapping"), gguf.ValueOf(sp.AttnSoftCap))
		b.Set(key("final_logit_softcapping"), gguf.ValueOf(sp.FinalSoftCap))
	case "gemma3", "gemma4", "gemma3n":
		if sp.FinalSoftCap > 0 {
			b.Set(key("final_logit_softcapping"), gguf.ValueOf(sp.FinalSoftCap))
		}
	default:
		return
	}
	b.Set(key("attention.sliding_window"), gguf.ValueOf(uint32(sp.SlidingWindow)))
}
