package tokenizer

import (
	"fmt"
	"unicode/utf8"
)

// replacement is U+FFFD REPLACEMENT CHARACTER in UTF-8.
const replacement = "\uFFFD"

// Decode renders ids as text with any tokenizer: the pieces of AppendPiece,
// starting with prev = -1, concatenated. An id outside the vocabulary is an
// error wrapping ErrTokenOutOfRange.
//
// Pieces are bytes, and byte-fallback tokens can form sequences that are not
// UTF-8. Each maximal subpart of an ill-formed sequence becomes one U+FFFD,
// the WHATWG Encoding Standard's UTF-8 decoder (JavaScript's TextDecoder) and
// the Unicode Standard's recommended practice (chapter 3, "U+FFFD
// Substitution of Maximal Subparts"): a truncated sequence such as E2 82
// is one U+FFFD. Go's own conversions differ: ranging over a string yields
// one U+FFFD per byte of it, and strings.ToValidUTF8 one per run of bad
// bytes. So the text here matches what the browser shows for the same bytes.
func Decode(t Tokenizer, ids []int) (string, error) {
	n := t.VocabSize()
	for i, id := range ids {
		if id < 0 || id >= n {
			return "", fmt.Errorf("%w: id %d at position %d (vocabulary has %d tokens)", ErrTokenOutOfRange, id, i, n)
		}
	}
	buf := make([]byte, 0, 4*len(ids))
	prev := -1
	for _, id := range ids {
		buf = t.AppendPiece(buf, prev, id)
		prev = id
	}
	if utf8.Valid(buf) {
		return string(buf), nil
	}
	out, _ := appendValidUTF8(make([]byte, 0, len(buf)+8), buf, true)
	return string(out), nil
}

// appendValidUTF8 appends src to dst, replacing each maximal subpart of an
// ill-formed UTF-8 sequence by U+FFFD (the WHATWG UTF-8 decoder). If final is
// false and src ends inside a sequence that later bytes could still complete,
// those bytes are left out; consumed says how many bytes of src were used.
func appendValidUTF8(dst, src []byte, final bool) (out []byte, consumed int) {
	for i := 0; i < len(src); {
		c := src[i]
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		need, lo, hi := sequenceBounds(c)
		if need == 0 {
			dst = append(dst, replacement...)
			i++
			continue
		}
		// j counts the bytes of the sequence seen so far and found valid.
		j := 1
		for ; j <= need; j++ {
			if i+j == len(src) {
				if !final {
					return dst, i
				}
				return append(dst, replacement...), len(src)
			}
			if b := src[i+j]; b < lo || b > hi {
				break
			}
			lo, hi = 0x80, 0xBF // only the second byte has narrower bounds
		}
		if j > need {
			dst = append(dst, src[i:i+j]...)
		} else {
			// src[i:i+j] is a maximal subpart; the byte that broke it starts
			// the next sequence.
			dst = append(dst, replacement...)
		}
		i += j
	}
	return dst, len(src)
}

// sequenceBounds reports, for a non-ASCII lead byte, how many continuation
// bytes follow it and the range allowed for the first of them (Unicode
// Table 3-7, which excludes overlong forms, surrogates and code points past
// U+10FFFF). need is 0 for bytes that cannot start a sequence.
func sequenceBounds(lead byte) (need int, lo, hi byte) {
	switch {
	case 0xC2 <= lead && lead <= 0xDF:
		return 1, 0x80, 0xBF
	case lead == 0xE0:
		return 2, 0xA0, 0xBF
	case lead == 0xED:
		return 2, 0x80, 0x9F
	case 0xE1 <= lead && lead <= 0xEF:
		return 2, 0x80, 0xBF
	case lead == 0xF0:
		return 3, 0x90, 0xBF
	case lead == 0xF4:
		return 3, 0x80, 0x8F
	case 0xF1 <= lead && lead <= 0xF3:
		return 3, 0x80, 0xBF
	}
	return 0, 0, 0
}
