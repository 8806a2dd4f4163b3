// Package bpe is the byte-level BPE tokenizer of GPT-2-style vocabularies:
// GPT-2, Llama 3, Qwen 2/3, DeepSeek, Falcon, StarCoder, MPT and the other
// GGUF vocabularies with tokenizer.ggml.model = "gpt2", and Hugging Face
// tokenizer.json files of the same kind; and, under the pre-tokenizer
// "gemma4", the SentencePiece-style BPE of Gemma 4 (raw UTF-8 tokens, see
// spmstyle.go).
//
// Encoding follows llama.cpp (src/llama-vocab.cpp) step by step, so that ids
// match llama.cpp's for GGUF vocabularies and Hugging Face's for
// tokenizer.json files:
//
//  1. special tokens are split out of the text (user-defined tokens always,
//     control tokens only with EncodeOptions.ParseSpecial);
//  2. the pre-tokenizer of the vocabulary cuts the rest into words;
//  3. each word's UTF-8 bytes are spelled in GPT-2's byte alphabet, one
//     character per byte, and merged pair by pair, lowest merge rank first
//     (leftmost first among equal ranks).
//
// Decoding maps each character of a token back to its byte, so
// Decode(Encode(s)) == s for all valid UTF-8.
//
// The package knows no file format but tokenizer.json: [New] takes plain
// slices, which the engine fills from a GGUF file.
package bpe

import (
	"fmt"
	"hash/maphash"
	"math"
	"strings"
	"sync"

	"github.com/wasmlm/wasmlm/tokenizer"
)

// Config describes a byte-level BPE vocabulary as plain data, as a GGUF file
// with tokenizer.ggml.model = "gpt2" holds it.
type Config struct {
	// Tokens are the vocabulary entries, indexed by id. Normal tokens are
	// spelled in GPT-2's byte alphabet ("Ġthe"); control and user-defined
	// tokens are literal text ("<|endoftext|>"). An empty entry becomes
	// "[EMPTY_<id>]", as in llama.cpp.
	Tokens []string
	// Types are the token types; nil means all tokenizer.TokenNormal.
	Types []tokenizer.TokenType
	// Merges are the merge rules, "left right", highest priority first
	// (tokenizer.ggml.merges; tokenizer.json's string form). The split is at
	// the first space after the first byte, as in llama.cpp.
	Merges []string
	// MergePairs is the same list as pairs (tokenizer.json's newer form);
	// set Merges or MergePairs, not both.
	MergePairs [][2]string
	// PreTokenizer names the pre-tokenizer as llama.cpp's
	// tokenizer.ggml.pre does: "gpt-2", "llama-bpe", "qwen2", ... (see
	// PreTokenizers). "" means "default", llama.cpp's choice for files
	// without the key.
	PreTokenizer string
	// IgnoreMerges makes a word that is a vocabulary entry as a whole
	// become that token without merging (Llama 3; see LlamaCppDefaults).
	IgnoreMerges bool
	// Special holds the special ids (-1: none) and whether
	// EncodeOptions.AddSpecial adds BOS and EOS.
	Special tokenizer.Special
	// LStrip and RStrip list special tokens that swallow the ASCII white
	// space on their left or right when they are split out of text
	// (llama.cpp's LSTRIP/RSTRIP attributes, tokenizer.json's lstrip/rstrip).
	LStrip, RStrip []int
}

// mergeRule is what a merge table entry yields: its rank (lower merges
// first) and the id of the merged token.
type mergeRule struct {
	rank, id int32
}

// BPE is a byte-level BPE tokenizer. It is immutable after New (but for an
// internal cache that changes no result) and safe for concurrent use.
type BPE struct {
	pre          preTokenizer
	ignoreMerges bool
	spm          bool // SentencePiece-style: raw UTF-8 tokens, "▁" for spaces, byte tokens (spmstyle.go)

	tokens []string
	types  []tokenizer.TokenType
	lookup map[string]int32 // token text -> id; the last id wins on duplicates, as in llama.cpp

	byteTokens [256]int32           // token spelling each single byte, -1 if none
	merges     map[uint64]mergeRule // key: left id << 32 | right id

	specials *tokenizer.Specials // split out of text before tokenizing

	special tokenizer.Special

	pieces tokenizer.Pieces // what each token renders as

	scratch sync.Pool  // *session, reused across Encode calls
	cache   *wordCache // tokens of recent words; see cache.go
}

var _ tokenizer.Tokenizer = (*BPE)(nil)

// New builds a tokenizer from cfg. Malformed data (mismatched lengths, ids or
// types out of range, a merge list in both forms) is an error wrapping
// tokenizer.ErrFormat; an unknown pre-tokenizer wraps
// ErrUnknownPreTokenizer. Merge rules whose two sides or whose result are
// not vocabulary entries can never apply and are skipped; a rule repeated
// later in the list keeps its first rank, as in llama.cpp.
func New(cfg Config) (*BPE, error) {
	tokens, types, err := tokenizer.CheckVocab(cfg.Tokens, cfg.Types)
	if err != nil {
		return nil, err
	}
	n := len(tokens)
	if cfg.Merges != nil && cfg.MergePairs != nil {
		return nil, fmt.Errorf("%w: both Merges and MergePairs are set", tokenizer.ErrFormat)
	}
	if err := cfg.Special.Check(n); err != nil {
		return nil, err
	}
	preName := cfg.PreTokenizer
	if preName == "" {
		preName = "default"
	}
	pre, err := newPreTokenizer(preName)
	if err != nil {
		return nil, err
	}
	b := &BPE{
		pre:          pre,
		ignoreMerges: cfg.IgnoreMerges,
		tokens:       tokens,
		types:        types,
		lookup:       make(map[string]int32, n),
		special:      cfg.Special,
	}
	for id, text := range tokens {
		b.lookup[text] = int32(id)
	}
	if b.spm = pre.spm; b.spm {
		b.byteTokens = b.spmByteTokens()
	} else {
		for c := range 256 {
			b.byteTokens[c] = b.id(alphabet.utf8Of[c])
		}
	}
	b.buildMerges(cfg.Merges, cfg.MergePairs)
	if b.pieces, err = tokenizer.NewPieces(tokens, b.render); err != nil {
		return nil, err
	}
	if b.specials, err = tokenizer.NewSpecials(b.tokens, b.types, cfg.LStrip, cfg.RStrip); err != nil {
		return nil, err
	}
	b.scratch.New = func() any { return new(session) }
	b.cache = &wordCache{seed: maphash.MakeSeed()}
	return b, nil
}

// id is the id of a token text, or -1.
func (b *BPE) id(text string) int32 {
	if id, ok := b.lookup[text]; ok {
		return id
	}
	return -1
}

// buildMerges turns the merge list into a table keyed by the ids of the two
// sides. Ranks are positions in the list.
func (b *BPE) buildMerges(merges []string, pairs [][2]string) {
	count := max(len(merges), len(pairs))
	b.merges = make(map[uint64]mergeRule, count)
	var joined []byte
	for rank := range min(count, math.MaxInt32) {
		var left, right string
		if merges != nil {
			// llama.cpp splits at the first space after the first byte, so a
			// left side that is itself a space survives.
			m := merges[rank]
			i := strings.IndexByte(m[min(1, len(m)):], ' ')
			if i < 0 {
				continue
			}
			left, right = m[:i+1], m[i+2:]
		} else {
			left, right = pairs[rank][0], pairs[rank][1]
		}
		l, r := b.id(left), b.id(right)
		joined = append(append(joined[:0], left...), right...)
		id := b.id(string(joined))
		if l < 0 || r < 0 || id < 0 {
			continue
		}
		key := pairKey(l, r)
		if _, dup := b.merges[key]; !dup {
			b.merges[key] = mergeRule{rank: int32(rank), id: id}
		}
	}
}

func pairKey(left, right int32) uint64 { return uint64(uint32(left))<<32 | uint64(uint32(right)) }

// render appends what token id renders as, as llama.cpp's token_to_piece
// does with special=false: a normal token mapped back to raw bytes, a
// user-defined token as its text; control, unknown, unused, byte and
// undefined tokens as nothing (llama.cpp treats the last three like control
// tokens in BPE vocabularies).
func (b *BPE) render(dst []byte, id int) ([]byte, error) {
	switch b.types[id] {
	case tokenizer.TokenNormal:
		if b.spm {
			return append(dst, strings.ReplaceAll(b.tokens[id], spmSpace, " ")...), nil
		}
		return appendUnmapped(dst, b.tokens[id]), nil
	case tokenizer.TokenByte:
		if c, ok := spmByte(b.tokens[id]); ok && b.spm {
			return append(dst, c), nil
		}
		return dst, nil
	case tokenizer.TokenUserDefined:
		return append(dst, b.tokens[id]...), nil
	}
	return dst, nil
}

// VocabSize is the number of tokens.
func (b *BPE) VocabSize() int { return len(b.tokens) }

// Special reports the special token ids and whether AddSpecial adds BOS/EOS.
func (b *BPE) Special() tokenizer.Special { return b.special }

// PreTokenizer is the name of the pre-tokenizer in use.
func (b *BPE) PreTokenizer() string { return b.pre.name }

// TokenText is the vocabulary entry of id as stored, normal tokens in the
// byte alphabet ("Ġthe"); "" when out of range.
func (b *BPE) TokenText(id int) string {
	if id < 0 || id >= len(b.tokens) {
		return ""
	}
	return b.tokens[id]
}

// Type is the token type of id (TokenUndefined when out of range).
func (b *BPE) Type(id int) tokenizer.TokenType {
	if id < 0 || id >= len(b.types) {
		return tokenizer.TokenUndefined
	}
	return b.types[id]
}

// AppendPiece appends the bytes id renders as: a normal token's characters
// mapped back through GPT-2's byte alphabet, a user-defined token's text,
// nothing for control and other special tokens. Byte-level BPE keeps every
// space in the tokens themselves, so prev is not needed and no space is
// dropped. It allocates only when dst lacks capacity.
func (b *BPE) AppendPiece(dst []byte, _, id int) []byte {
	if id < 0 || id >= len(b.tokens) {
		return dst
	}
	return append(dst, b.pieces.Piece(id)...)
}
