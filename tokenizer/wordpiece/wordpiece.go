// Package wordpiece is the WordPiece tokenizer of BERT-family vocabularies:
// GGUF files with tokenizer.ggml.model = "bert" (BERT, BGE, MiniLM,
// nomic-embed, the embedding and reranking models llama.cpp runs).
//
// Encoding is llama.cpp's llm_tokenizer_wpm (src/llama-vocab.cpp), step by
// step, so that ids match llama.cpp's:
//
//  1. special tokens are split out of the text (user-defined tokens always,
//     control and unknown tokens only with EncodeOptions.ParseSpecial);
//  2. each remaining piece is cut into words: white space ends a word;
//     control characters, NUL and U+FFFD are dropped; punctuation, ASCII
//     symbols and CJK ideographs are words of their own; with StripAccents,
//     each code point is first mapped by llama.cpp's one-code-point "NFD"
//     table (é to e) and accent marks are dropped; with Lowercase, code
//     points are lower-cased by llama.cpp's table. The character classes
//     and maps are llama.cpp's own tables (tables.go, generated from its
//     src/unicode-data.cpp), not Go's: they are what decides the ids;
//  3. each word, prefixed with "▁" (U+2581, which GGUF's BERT vocabularies
//     put before every word-initial piece, where Hugging Face's have no
//     prefix and "##" before the others), is split greedily into the
//     longest vocabulary entries, byte by byte from the left; if some
//     position has no entry, the whole word becomes the unknown token.
//     Words have no length limit (Hugging Face's 100-character one is not
//     llama.cpp's).
//
// With EncodeOptions.AddSpecial, BOS ([CLS]) comes first and SEP ([SEP])
// last, whatever Special.AddBOS says, as llama.cpp's llama_tokenize does for
// this vocabulary type.
//
// Decoding is llama.cpp's token_to_piece: a normal token's text with each
// "▁" turned into a space, a user-defined token's text, nothing for control
// and unknown tokens; so decoded text starts with a space and has spaces
// around punctuation. Detokenize adds the clean-up of those spaces that
// llama_detokenize does for this vocabulary type.
//
// The package knows no file format: [New] takes plain slices, which the
// engine fills from a GGUF file (engine/vocab).
package wordpiece

import (
	"fmt"
	"sync"

	"github.com/wasmlm/wasmlm/tokenizer"
)

// Config describes a WordPiece vocabulary as plain data, as a GGUF file with
// tokenizer.ggml.model = "bert" holds it.
type Config struct {
	// Tokens are the vocabulary entries, indexed by id: a piece that
	// starts a word with the "▁" prefix ("▁hello"), one that continues a
	// word without it ("ing", Hugging Face's "##ing"), special tokens
	// as they are ("[CLS]"). An empty entry becomes "[EMPTY_<id>]", as in
	// llama.cpp; of entries with the same text, the last id is the one
	// encoding gives, as in llama.cpp.
	Tokens []string
	// Types are the token types; nil means all tokenizer.TokenNormal. Byte
	// tokens are an error: llama.cpp aborts on them in this vocabulary type.
	Types []tokenizer.TokenType
	// Special holds the special ids (-1: none): BOS is [CLS], SEP [SEP],
	// UNK [UNK]. AddBOS, AddEOS and AddSEP are kept for pair formatting;
	// Encode does not read them.
	Special tokenizer.Special
	// Lowercase lower-cases text before splitting it into pieces
	// (tokenizer.ggml.normalizer.lowercase; llama.cpp's default is true).
	Lowercase bool
	// StripAccents maps each code point to the first of its decomposition
	// and drops accent marks (tokenizer.ggml.normalizer.strip_accents;
	// llama.cpp's default is the lowercase setting).
	StripAccents bool
	// LStrip and RStrip list special tokens that swallow the ASCII white
	// space on their left or right when they are split out of text
	// (llama.cpp's LSTRIP/RSTRIP token attributes).
	LStrip, RStrip []int
}

// WordPiece is a WordPiece tokenizer. It is immutable after New and safe for
// concurrent use.
type WordPiece struct {
	tokens []string
	types  []tokenizer.TokenType
	trie   trie // every token text, for the longest match

	specials *tokenizer.Specials // split out of text before tokenizing
	special  tokenizer.Special

	lowercase, stripAccents bool

	pieces tokenizer.Pieces // what each token renders as

	scratch sync.Pool // *session, reused across Encode calls
}

var _ tokenizer.Tokenizer = (*WordPiece)(nil)

// New builds a tokenizer from cfg. Malformed data (mismatched lengths, ids or
// types out of range, a byte token) is an error wrapping tokenizer.ErrFormat.
func New(cfg Config) (*WordPiece, error) {
	tokens, types, err := tokenizer.CheckVocab(cfg.Tokens, cfg.Types)
	if err != nil {
		return nil, err
	}
	if err := cfg.Special.CheckIDs(len(tokens)); err != nil {
		return nil, err
	}
	for id, typ := range types {
		if typ == tokenizer.TokenByte {
			return nil, fmt.Errorf("%w: token %d is a byte token, which a WordPiece vocabulary cannot have", tokenizer.ErrFormat, id)
		}
	}
	w := &WordPiece{
		tokens:       tokens,
		types:        types,
		trie:         buildTrie(tokens),
		special:      cfg.Special,
		lowercase:    cfg.Lowercase,
		stripAccents: cfg.StripAccents,
	}
	if w.pieces, err = tokenizer.NewPieces(tokens, w.render); err != nil {
		return nil, err
	}
	if w.specials, err = tokenizer.NewSpecials(tokens, types, cfg.LStrip, cfg.RStrip); err != nil {
		return nil, err
	}
	w.scratch.New = func() any { return new(session) }
	return w, nil
}

// render appends what token id renders as, as llama.cpp's token_to_piece
// does with special=false: a normal token with each "▁" turned into a
// space, a user-defined token as its text; control, unknown, unused and
// undefined tokens as nothing.
func (w *WordPiece) render(dst []byte, id int) ([]byte, error) {
	switch w.types[id] {
	case tokenizer.TokenNormal:
		return tokenizer.AppendUnescaped(dst, w.tokens[id], tokenizer.SpaceMarker), nil
	case tokenizer.TokenUserDefined:
		return append(dst, w.tokens[id]...), nil
	}
	return dst, nil
}

// VocabSize is the number of tokens.
func (w *WordPiece) VocabSize() int { return len(w.tokens) }

// Special reports the special token ids and the vocabulary's flags.
func (w *WordPiece) Special() tokenizer.Special { return w.special }

// TokenText is the vocabulary entry of id as stored ("▁hello"); "" when out
// of range.
func (w *WordPiece) TokenText(id int) string {
	if id < 0 || id >= len(w.tokens) {
		return ""
	}
	return w.tokens[id]
}

// Normalization reports whether the tokenizer lower-cases text and strips
// accents.
func (w *WordPiece) Normalization() (lowercase, stripAccents bool) {
	return w.lowercase, w.stripAccents
}

// AppendPiece appends the bytes id renders as (llama.cpp's token_to_piece
// with special=false): a normal token's text with "▁" turned into a space,
// a user-defined token's text, nothing for the others. No leading space is
// dropped (llama.cpp adds no space prefix for WordPiece), so prev is not
// needed. It allocates only when dst lacks capacity.
func (w *WordPiece) AppendPiece(dst []byte, _, id int) []byte {
	if id < 0 || id >= len(w.tokens) {
		return dst
	}
	return append(dst, w.pieces.Piece(id)...)
}

// Detokenize is llama.cpp's llama_detokenize for this vocabulary type, with
// remove_special and unparse_special false: the pieces of ids
// (tokenizer.Decode), then its clean-up of the spaces a WordPiece encoding
// leaves, which needs the text on both sides of a piece and so is not part
// of AppendPiece. An id outside the vocabulary is an error wrapping
// tokenizer.ErrTokenOutOfRange.
func (w *WordPiece) Detokenize(ids []int) (string, error) {
	text, err := tokenizer.Decode(w, ids)
	if err != nil {
		return "", err
	}
	return string(cleanSpaces([]byte(text))), nil
}
