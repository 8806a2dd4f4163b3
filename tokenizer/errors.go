package tokenizer

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Sentinel errors; functions wrap them with %w and add detail.
var (
	// ErrInvalidUTF8 is returned when text to encode is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("tokenizer: text is not valid UTF-8")
	// ErrTokenOutOfRange is returned when a token id is not in the vocabulary.
	ErrTokenOutOfRange = errors.New("tokenizer: token id out of range")
	// ErrFormat is returned when tokenizer data is malformed or truncated.
	ErrFormat = errors.New("tokenizer: malformed tokenizer data")
	// ErrTextTooLong is returned when text to encode is longer than a
	// tokenizer can index.
	ErrTextTooLong = errors.New("tokenizer: text too long")
	// ErrNoToken is returned when text holds a character that no token can
	// represent: the vocabulary has no byte-fallback tokens for it and no
	// unknown token; or when a token to add (WordPiece's BOS and SEP) is
	// missing.
	ErrNoToken = errors.New("tokenizer: no token for text")
)

// MaxTextBytes bounds the text the tokenizers here encode, so that offsets
// into it (grown by escaping) fit in an int32 and the per-call buffers stay
// proportionate.
const MaxTextBytes = 256 << 20

// CheckText is the check every Encode starts with: text longer than
// MaxTextBytes is an error wrapping ErrTextTooLong, text that is not valid
// UTF-8 one wrapping ErrInvalidUTF8 that gives the first bad byte's offset.
func CheckText(text string) error {
	if len(text) > MaxTextBytes {
		return fmt.Errorf("%w: %d bytes (limit %d)", ErrTextTooLong, len(text), MaxTextBytes)
	}
	if utf8.ValidString(text) {
		return nil
	}
	for i, r := range text {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(text[i:]); size == 1 {
				return fmt.Errorf("%w: invalid byte at offset %d", ErrInvalidUTF8, i)
			}
		}
	}
	return ErrInvalidUTF8 // not reached: invalid text has such a byte
}
