package tokenizer

import (
	"fmt"
	"unicode/utf8"
)

// TokenType is the kind of a vocabulary entry, numbered as llama.cpp numbers
// them (the GGUF key tokenizer.ggml.token_type).
type TokenType int32

// Token types. Encoding and decoding treat them as llama.cpp does:
// control and unknown tokens render as nothing and are split out of text only
// with EncodeOptions.ParseSpecial; user-defined tokens are always split out of
// text and render as their literal text; byte tokens render as one raw byte.
const (
	TokenUndefined   TokenType = 0
	TokenNormal      TokenType = 1
	TokenUnknown     TokenType = 2
	TokenControl     TokenType = 3
	TokenUserDefined TokenType = 4
	TokenUnused      TokenType = 5
	TokenByte        TokenType = 6
)

// SpaceMarker is U+2581 LOWER ONE EIGHTH BLOCK, which SentencePiece
// vocabularies use in place of a space.
const SpaceMarker = "\u2581"

// SPMConfig describes a SentencePiece-BPE vocabulary as plain data, as a GGUF
// file with tokenizer.ggml.model = "llama" holds it.
type SPMConfig struct {
	// Tokens are the pieces, indexed by id, with SpaceMarker for spaces.
	// llama.cpp replaces an empty piece by "[EMPTY_<id>]"; so does NewSPM.
	Tokens []string
	// Scores are the merge priorities (higher merges first); nil means all
	// zero, as llama.cpp assumes when a file has none.
	Scores []float32
	// Types are the token types; nil means all TokenNormal.
	Types []TokenType
	// Special holds the special ids (-1: none) and whether
	// EncodeOptions.AddSpecial adds BOS and EOS.
	Special Special
	// AddSpacePrefix adds SentencePiece's dummy-prefix space before text
	// that starts a prompt or follows a special token, and makes AppendPiece
	// drop the leading space of the first piece after BOS
	// (tokenizer.ggml.add_space_prefix; llama.cpp's default is true).
	AddSpacePrefix bool
	// SpaceMarker is the character the pieces use for a space: "" means
	// SpaceMarker (U+2581); llama2.c files use " ".
	SpaceMarker string
	// LStrip and RStrip list special tokens that swallow the whitespace on
	// their left or right when they are split out of text (llama.cpp's
	// LSTRIP/RSTRIP token attributes, which GGUF does not store: llama.cpp
	// sets them by model name, e.g. RStrip for Phi-3's added tokens).
	LStrip, RStrip []int
}

// SPM is a SentencePiece-BPE tokenizer: the tokenizer of llama2.c checkpoints
// and of GGUF "llama" vocabularies (Llama 1/2, Mistral v0.1, Phi-3, TinyLlama...).
// It encodes exactly as llama.cpp's llm_tokenizer_spm and, for llama2.c files,
// as llama2.c's encode().
type SPM struct {
	tokens []string
	scores []float32
	types  []TokenType
	lookup map[string]int32 // piece text -> id; the last id wins on duplicates, as in llama.cpp

	pieces Pieces // what each token renders as

	byteTokens [256]int32 // token of each byte for byte fallback, -1 if none

	specials *Specials // split out of text before tokenizing

	special        Special
	addSpacePrefix bool
	marker         string
	maxPieceLen    int // the longest piece, in bytes
}

var _ Tokenizer = (*SPM)(nil)

// NewSPM builds an SPM tokenizer from cfg. It checks that the slices agree in
// length, that ids and types are in range, that byte tokens are spelled
// <0xXX> and that scores are numbers; errors wrap ErrFormat.
func NewSPM(cfg SPMConfig) (*SPM, error) {
	tokens, types, err := CheckVocab(cfg.Tokens, cfg.Types)
	if err != nil {
		return nil, err
	}
	n := len(tokens)
	if cfg.Scores != nil && len(cfg.Scores) != n {
		return nil, fmt.Errorf("%w: %d scores for %d tokens", ErrFormat, len(cfg.Scores), n)
	}
	if err := cfg.Special.Check(n); err != nil {
		return nil, err
	}
	marker := cfg.SpaceMarker
	if marker == "" {
		marker = SpaceMarker
	}
	if !utf8.ValidString(marker) || utf8.RuneCountInString(marker) != 1 {
		return nil, fmt.Errorf("%w: space marker %q is not one UTF-8 character", ErrFormat, marker)
	}

	s := &SPM{
		tokens:         tokens,
		scores:         make([]float32, n),
		types:          types,
		lookup:         make(map[string]int32, n),
		special:        cfg.Special,
		addSpacePrefix: cfg.AddSpacePrefix,
		marker:         marker,
	}
	for id, text := range tokens {
		if cfg.Scores != nil {
			if score := cfg.Scores[id]; score != score {
				return nil, fmt.Errorf("%w: token %d has score NaN", ErrFormat, id)
			}
			s.scores[id] = cfg.Scores[id]
		}
		s.maxPieceLen = max(s.maxPieceLen, len(text))
		s.lookup[text] = int32(id)
	}
	if s.pieces, err = NewPieces(tokens, s.render); err != nil {
		return nil, err
	}
	s.buildByteFallback()
	if s.specials, err = NewSpecials(s.tokens, s.types, cfg.LStrip, cfg.RStrip); err != nil {
		return nil, err
	}
	return s, nil
}

// render appends what token id renders as, as llama.cpp's token_to_piece
// does with special=false: a normal token with the space marker turned into
// spaces, a byte token as its byte, a user-defined token as its text;
// control, unknown, unused and undefined tokens as nothing.
func (s *SPM) render(dst []byte, id int) ([]byte, error) {
	text := s.tokens[id]
	switch s.types[id] {
	case TokenNormal:
		return AppendUnescaped(dst, text, s.marker), nil
	case TokenUserDefined:
		return append(dst, text...), nil
	case TokenByte:
		b, ok := parseByteToken(text)
		if !ok {
			return nil, fmt.Errorf("%w: byte token %d is %q, not <0xXX>", ErrFormat, id, text)
		}
		return append(dst, b), nil
	}
	return dst, nil
}

// parseByteToken parses a byte token's text, "<0xXX>" with two hex digits
// (either case, as llama2.c's sscanf "<0x%02hhX>" accepts).
func parseByteToken(text string) (byte, bool) {
	if len(text) != 6 || text[:3] != "<0x" || text[5] != '>' {
		return 0, false
	}
	hi, ok1 := hexDigit(text[3])
	lo, ok2 := hexDigit(text[4])
	return hi<<4 | lo, ok1 && ok2
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// buildByteFallback finds the token for each byte as llama.cpp's
// byte_to_token does: the piece "<0xXX>" (upper-case hex), else the one-byte
// piece itself.
func (s *SPM) buildByteFallback() {
	const hex = "0123456789ABCDEF"
	for b := range 256 {
		name := []byte{'<', '0', 'x', hex[b>>4], hex[b&15], '>'}
		id, ok := s.lookup[string(name)]
		if !ok {
			id, ok = s.lookup[string([]byte{byte(b)})]
		}
		if !ok {
			id = -1
		}
		s.byteTokens[b] = id
	}
}

// VocabSize is the number of tokens.
func (s *SPM) VocabSize() int { return len(s.tokens) }

// Special reports the special token ids and whether AddSpecial adds BOS/EOS.
func (s *SPM) Special() Special { return s.special }

// TokenText is the piece of id as the vocabulary spells it ("" when out of
// range). For llama2.c files, BOS and EOS read "<s>" and "</s>" (the file
// stores "\n<s>\n" and "\n</s>\n"), as llama.cpp's converter names them.
func (s *SPM) TokenText(id int) string {
	if id < 0 || id >= len(s.tokens) {
		return ""
	}
	return s.tokens[id]
}

// Type is the token type of id (TokenUndefined when out of range).
func (s *SPM) Type(id int) TokenType {
	if id < 0 || id >= len(s.types) {
		return TokenUndefined
	}
	return s.types[id]
}

// AppendPiece appends the text id renders as: normal pieces with the space
// marker turned into spaces, byte tokens as their raw byte, user-defined
// tokens verbatim, control and unknown tokens as nothing. After BOS (prev is
// BOS) one leading space of a non-byte piece is dropped, undoing the dummy
// prefix as llama2.c's decode does, if the vocabulary adds that prefix. It
// allocates only when dst lacks capacity.
func (s *SPM) AppendPiece(dst []byte, prev, id int) []byte {
	if id < 0 || id >= len(s.tokens) {
		return dst
	}
	piece := s.pieces.Piece(id)
	if prev >= 0 && prev == s.special.BOS && s.addSpacePrefix &&
		s.types[id] != TokenByte && len(piece) > 0 && piece[0] == ' ' {
		piece = piece[1:]
	}
	return append(dst, piece...)
}
