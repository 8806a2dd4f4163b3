package tokenizer

import "unicode/utf8"

// StreamDecoder turns generated tokens into text as they arrive, with any
// tokenizer. It never returns part of a UTF-8 character: the bytes of a
// character that is still incomplete are held back until the token that
// completes it; bytes that can no longer become valid UTF-8 come out at once
// as U+FFFD, by the same rule as Decode. So the concatenation of everything
// Add and Flush return equals Decode of the same ids.
//
// It remembers the previous token for AppendPiece (the space after BOS).
// A StreamDecoder is not safe for concurrent use.
type StreamDecoder struct {
	t    Tokenizer
	prev int

	pending  [utf8.UTFMax - 1]byte // an incomplete trailing sequence
	npending int

	raw []byte // pending bytes plus the newest piece
	out []byte // raw with ill-formed sequences replaced
}

// NewStreamDecoder returns a decoder for t at the start of a text.
func NewStreamDecoder(t Tokenizer) *StreamDecoder {
	return &StreamDecoder{t: t, prev: -1}
}

// AddBytes decodes id and returns the text that became complete with it. The
// slice belongs to the decoder and is valid until the next call; in steady
// state (once its buffers have grown to the longest piece) AddBytes
// allocates nothing. An id outside the vocabulary contributes no text.
func (d *StreamDecoder) AddBytes(id int) []byte {
	d.raw = append(d.raw[:0], d.pending[:d.npending]...)
	d.raw = d.t.AppendPiece(d.raw, d.prev, id)
	d.prev = id
	d.npending = 0
	if utf8.Valid(d.raw) {
		return d.raw
	}
	var n int
	d.out, n = appendValidUTF8(d.out[:0], d.raw, false)
	// What is left is a proper prefix of a sequence: at most 3 bytes.
	d.npending = copy(d.pending[:], d.raw[n:])
	return d.out
}

// Add is AddBytes as a string. It allocates the string when it is not empty.
func (d *StreamDecoder) Add(id int) string {
	return string(d.AddBytes(id))
}

// Flush ends the text: held-back bytes of an unfinished character come out
// as one U+FFFD. The previous token is kept, so decoding may go on.
func (d *StreamDecoder) Flush() string {
	if d.npending == 0 {
		return ""
	}
	d.npending = 0
	return replacement
}

// SetPrevious makes id the token decoded just before the next Add, without
// producing its text: a generation continuing a prompt passes the prompt's
// last token, so that the first piece after a BOS-only prompt loses its
// dummy-prefix space.
func (d *StreamDecoder) SetPrevious(id int) {
	d.prev = id
}

// Reset returns the decoder to the start of a text, dropping held-back bytes.
func (d *StreamDecoder) Reset() {
	d.prev = -1
	d.npending = 0
}
