package tokenizer

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxVocab bounds the vocabulary size the tokenizers here accept; ids are
// stored as int32.
const MaxVocab = 1 << 24

// CheckVocab checks a vocabulary's token texts and types as every tokenizer
// here takes them, and returns the copies to keep: 1 to MaxVocab tokens;
// types nil (all TokenNormal) or one per token, each within llama.cpp's
// enum; an empty text becomes "[EMPTY_<id>]", as llama.cpp makes it. Errors
// wrap ErrFormat.
func CheckVocab(tokens []string, types []TokenType) ([]string, []TokenType, error) {
	n := len(tokens)
	if n == 0 || n > MaxVocab {
		return nil, nil, fmt.Errorf("%w: vocabulary has %d tokens (want 1..%d)", ErrFormat, n, MaxVocab)
	}
	if types != nil && len(types) != n {
		return nil, nil, fmt.Errorf("%w: %d token types for %d tokens", ErrFormat, len(types), n)
	}
	texts, typs := make([]string, n), make([]TokenType, n)
	for id, text := range tokens {
		if text == "" {
			text = "[EMPTY_" + strconv.Itoa(id) + "]"
		}
		typ := TokenNormal
		if types != nil {
			typ = types[id]
		}
		if typ < TokenUndefined || typ > TokenByte {
			return nil, nil, fmt.Errorf("%w: token %d has type %d (want 0..6)", ErrFormat, id, typ)
		}
		texts[id], typs[id] = text, typ
	}
	return texts, typs, nil
}

// Pieces are the bytes each token of a vocabulary renders as, rendered once
// so that AppendPiece is a copy.
type Pieces struct {
	bytes []byte   // bytes[off[id]:off[id+1]] is what id renders as
	off   []uint32 // by id, and one past the last
}

// NewPieces renders the tokens of a vocabulary: render appends to dst what
// token id renders as. An error of render, or more than 4 GiB of pieces, is
// an error (wrapping ErrFormat for the latter).
func NewPieces(tokens []string, render func(dst []byte, id int) ([]byte, error)) (Pieces, error) {
	size := 0
	for _, text := range tokens {
		size += len(text)
	}
	p := Pieces{bytes: make([]byte, 0, size), off: make([]uint32, len(tokens)+1)}
	for id := range tokens {
		var err error
		if p.bytes, err = render(p.bytes, id); err != nil {
			return Pieces{}, err
		}
		if len(p.bytes) > math.MaxUint32 {
			return Pieces{}, fmt.Errorf("%w: vocabulary text exceeds 4 GiB", ErrFormat)
		}
		p.off[id+1] = uint32(len(p.bytes))
	}
	return p, nil
}

// Piece is what token id (a token of the vocabulary) renders as; the bytes
// are shared, not to be changed.
func (p *Pieces) Piece(id int) []byte { return p.bytes[p.off[id]:p.off[id+1]] }

// AppendUnescaped appends text with every marker replaced by a space
// (llama.cpp's llama_unescape_whitespace with SpaceMarker).
func AppendUnescaped(dst []byte, text, marker string) []byte {
	if marker == " " {
		return append(dst, text...)
	}
	for {
		i := strings.Index(text, marker)
		if i < 0 {
			return append(dst, text...)
		}
		dst = append(dst, text[:i]...)
		dst = append(dst, ' ')
		text = text[i+len(marker):]
	}
}
