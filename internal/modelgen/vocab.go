package modelgen

import (
	"fmt"

	"github.com/wasmlm/wasmlm/engine/gguf"
)

// The synthetic vocabulary's control tokens.
const (
	unkID = 0
	bosID = 1
	eosID = 2
	// byteBase is the id of <0x00>; the 256 byte tokens follow it.
	byteBase = 3
)

// MinVocabSize is the smallest vocabulary Build writes: the three control
// tokens and the 256 byte tokens.
const MinVocabSize = byteBase + 256

// SentencePiece token types (llama.cpp's llama_token_type).
const (
	typeNormal      = 1
	typeUnknown     = 2
	typeControl     = 3
	typeUserDefined = 4
	typeByte        = 6
)

// spmVocab writes a SentencePiece vocabulary of n tokens: <unk>, <s>, </s>,
// the 256 byte tokens, then "▁t<i>" pieces, the last len(special) of them
// replaced by special (a chat template's markers). Scores fall with the id.
func spmVocab(b *gguf.Builder, n int, special []specialToken) {
	tokens := make([]string, n)
	scores := make([]float32, n)
	types := make([]int32, n)
	for i := range n {
		switch {
		case i == unkID:
			tokens[i], types[i] = "<unk>", typeUnknown
		case i == bosID:
			tokens[i], types[i] = "<s>", typeControl
		case i == eosID:
			tokens[i], types[i] = "</s>", typeControl
		case i < MinVocabSize:
			tokens[i], types[i] = fmt.Sprintf("<0x%02X>", i-byteBase), typeByte
		case i >= n-len(special):
			sp := special[i-(n-len(special))]
			tokens[i], types[i] = sp.text, typeControl
			if sp.userDefined {
				types[i] = typeUserDefined
			}
		default:
			tokens[i], types[i] = fmt.Sprintf("▁t%d", i), typeNormal
		}
		scores[i] = -float32(i)
	}
	b.Set("tokenizer.ggml.model", gguf.ValueOf("llama"))
	b.Set("tokenizer.ggml.tokens", gguf.ArrayOf(tokens))
	b.Set("tokenizer.ggml.scores", gguf.ArrayOf(scores))
	b.Set("tokenizer.ggml.token_type", gguf.ArrayOf(types))
	b.Set("tokenizer.ggml.bos_token_id", gguf.ValueOf(uint32(bosID)))
	b.Set("tokenizer.ggml.eos_token_id", gguf.ValueOf(uint32(eosID)))
}
