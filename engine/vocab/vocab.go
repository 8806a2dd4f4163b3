// Package vocab builds the tokenizer that a GGUF file describes, reading its
// tokenizer.ggml.* keys the way llama.cpp's llama_vocab::impl::load does
// (llama.cpp of early 2025): "gpt2" vocabularies become a byte-level BPE
// (package tokenizer/bpe), "llama" vocabularies a SentencePiece tokenizer
// (tokenizer.SPM), "bert" vocabularies a WordPiece tokenizer (package
// tokenizer/wordpiece), "gemma4" vocabularies (Gemma 4's SentencePiece-style
// BPE) a BPE tokenizer under the pre-tokenizer "gemma4".
//
// It is the glue between the file format and the tokenizers, which know no
// file format: it also carries llama.cpp's loading rules that GGUF does not
// store, such as the default special ids of each model type, turning tokens
// that look like end-of-turn or fill-in-the-middle markers into control
// tokens, and the Phi-3 RSTRIP attributes.
package vocab

import (
	"fmt"
	"strings"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/tokenizer"
	"github.com/wasmlm/wasmlm/tokenizer/bpe"
	"github.com/wasmlm/wasmlm/tokenizer/wordpiece"
)

// GGUF keys read here.
const (
	keyModel          = "tokenizer.ggml.model"
	keyPre            = "tokenizer.ggml.pre"
	keyTokens         = "tokenizer.ggml.tokens"
	keyScores         = "tokenizer.ggml.scores"
	keyTokenType      = "tokenizer.ggml.token_type"
	keyMerges         = "tokenizer.ggml.merges"
	keyAddBOS         = "tokenizer.ggml.add_bos_token"
	keyAddEOS         = "tokenizer.ggml.add_eos_token"
	keyAddSEP         = "tokenizer.ggml.add_sep_token"
	keyAddSpacePrefix = "tokenizer.ggml.add_space_prefix"
	keyBOS            = "tokenizer.ggml.bos_token_id"
	keyEOS            = "tokenizer.ggml.eos_token_id"
	keyEOT            = "tokenizer.ggml.eot_token_id"
	keyEOM            = "tokenizer.ggml.eom_token_id"
	keyUNK            = "tokenizer.ggml.unknown_token_id"
	keySEP            = "tokenizer.ggml.seperator_token_id" // sic: llama.cpp's spelling
	keyPAD            = "tokenizer.ggml.padding_token_id"
	keyName           = "general.name"
	keyLowercase      = "tokenizer.ggml.normalizer.lowercase"
	keyStripAccents   = "tokenizer.ggml.normalizer.strip_accents"
)

// FromGGUF returns the tokenizer of f, chosen by tokenizer.ggml.model:
// "gpt2" and "gemma4" give a *bpe.BPE, "llama" a *tokenizer.SPM, "bert" a
// *wordpiece.WordPiece. Another model type is
// an error wrapping ErrUnsupportedModel, an unknown tokenizer.ggml.pre one
// wrapping bpe.ErrUnknownPreTokenizer; both name what the file says.
func FromGGUF(f *gguf.File) (tokenizer.Tokenizer, error) {
	model, err := f.String(keyModel)
	if err != nil {
		return nil, fmt.Errorf("vocab: %w", err)
	}
	// The concrete results are checked before conversion to the interface,
	// so that an error never comes with a non-nil Tokenizer.
	switch model {
	case "gpt2", "gemma4":
		b, err := fromBPE(f, model)
		if err != nil {
			return nil, err
		}
		return b, nil
	case "llama":
		s, err := fromSPM(f)
		if err != nil {
			return nil, err
		}
		return s, nil
	case "bert":
		w, err := fromWPM(f)
		if err != nil {
			return nil, err
		}
		return w, nil
	}
	return nil, fmt.Errorf("%w: %s is %q (supported: \"gpt2\", byte-level BPE; \"gemma4\", SentencePiece-style BPE; \"llama\", SentencePiece; \"bert\", WordPiece)", ErrUnsupportedModel, keyModel, model)
}

// fromBPE reads a "gpt2" or "gemma4" vocabulary. A "gemma4" one has no
// default special ids, its pre-tokenizer is "gemma4" whatever the file says,
// and, as for any vocabulary under that pre-tokenizer, BOS is added even
// where the file says not to (llama.cpp's rules).
func fromBPE(f *gguf.File, model string) (*bpe.BPE, error) {
	pre, err := f.StringOr(keyPre, "")
	if err != nil {
		return nil, fmt.Errorf("vocab: %w", err)
	}
	def := defaults{bos: 11, eos: 11, unk: -1, pad: -1, sep: -1}
	switch {
	case model == "gemma4":
		pre, def.bos, def.eos = "gemma4", -1, -1
	case pre == "":
		pre = "default" // llama.cpp warns and uses its default regexes
	}
	ignoreMerges, addBOS := bpe.LlamaCppDefaults(pre)
	def.addBOS = addBOS
	// llama.cpp sets add_sep for the pre-tokenizers of BERT-like BPE models.
	def.addSEP = pre == "jina-v1-en" || pre == "jina-v2-code" || pre == "roberta-bpe"
	def.noBOS = pre == "chatglm-bpe"
	v, err := readVocab(f, def)
	if err != nil {
		return nil, err
	}
	if pre == "gemma4" {
		v.special.AddBOS = true
	}
	merges, err := f.Strings(keyMerges)
	if err != nil {
		return nil, fmt.Errorf("vocab: BPE vocabulary without merges: %w", err)
	}
	if strings.Contains(pre, "jina-v2-") {
		if id, ok := v.ids["<mask>"]; ok {
			v.lstrip = append(v.lstrip, id) // llama.cpp's attribute for the Jina v2 models
		}
	}
	b, err := bpe.New(bpe.Config{
		Tokens:       v.tokens,
		Types:        v.types,
		Merges:       merges,
		PreTokenizer: pre,
		IgnoreMerges: ignoreMerges,
		Special:      v.special,
		LStrip:       v.lstrip,
		RStrip:       v.rstrip,
	})
	if err != nil {
		return nil, fmt.Errorf("vocab: %w", err)
	}
	return b, nil
}

// fromSPM reads a "llama" vocabulary.
func fromSPM(f *gguf.File) (*tokenizer.SPM, error) {
	v, err := readVocab(f, defaults{bos: 1, eos: 2, unk: 0, pad: -1, sep: -1, addBOS: true})
	if err != nil {
		return nil, err
	}
	var scores []float32
	if _, ok := f.Lookup(keyScores); ok {
		if scores, err = f.Float32s(keyScores); err != nil {
			return nil, fmt.Errorf("vocab: %w", err)
		}
		if len(scores) != len(v.tokens) {
			return nil, fmt.Errorf("%w: %d scores for %d tokens", ErrFormat, len(scores), len(v.tokens))
		}
	}
	addSpacePrefix, err := f.BoolOr(keyAddSpacePrefix, true)
	if err != nil {
		return nil, fmt.Errorf("vocab: %w", err)
	}
	s, err := tokenizer.NewSPM(tokenizer.SPMConfig{
		Tokens:         v.tokens,
		Scores:         scores,
		Types:          v.types,
		Special:        v.special,
		AddSpacePrefix: addSpacePrefix,
		LStrip:         v.lstrip,
		RStrip:         v.rstrip,
	})
	if err != nil {
		return nil, fmt.Errorf("vocab: %w", err)
	}
	return s, nil
}

// fromWPM reads a "bert" vocabulary: llama.cpp's defaults are BOS ([CLS])
// 101, UNK 100, SEP 102, PAD 0 (and MASK 103, which nothing here needs),
// no EOS, add_bos and add_sep set; text is lower-cased unless
// tokenizer.ggml.normalizer.lowercase says otherwise, and accents are
// stripped as text is lower-cased unless
// tokenizer.ggml.normalizer.strip_accents says otherwise.
func fromWPM(f *gguf.File) (*wordpiece.WordPiece, error) {
	v, err := readVocab(f, defaults{bos: 101, eos: -1, unk: 100, pad: 0, sep: 102, addBOS: true, addSEP: true})
	if err != nil {
		return nil, err
	}
	lowercase, err := f.BoolOr(keyLowercase, true)
	if err != nil {
		return nil, fmt.Errorf("vocab: %w", err)
	}
	stripAccents, err := f.BoolOr(keyStripAccents, lowercase)
	if err != nil {
		return nil, fmt.Errorf("vocab: %w", err)
	}
	w, err := wordpiece.New(wordpiece.Config{
		Tokens:       v.tokens,
		Types:        v.types,
		Special:      v.special,
		Lowercase:    lowercase,
		StripAccents: stripAccents,
		LStrip:       v.lstrip,
		RStrip:       v.rstrip,
	})
	if err != nil {
		return nil, fmt.Errorf("vocab: %w", err)
	}
	return w, nil
}
