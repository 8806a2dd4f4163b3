package bpe

import "unicode/utf8"

// GPT-2's byte-level alphabet. Byte-level vocabularies never hold raw bytes:
// each byte is spelled by one printable character, so that a merge table of
// plain strings can cover every byte sequence. Bytes that are printable
// Latin-1 characters ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves;
// the other 68 bytes, in increasing order, take U+0100, U+0101, ... (space,
// 0x20, becomes 'Ġ' U+0120 and newline 'Ċ' U+010A). This is bytes_to_unicode
// of OpenAI's GPT-2 encoder.py, which Hugging Face's ByteLevel and llama.cpp's
// unicode_byte_to_utf8 reproduce.

// byteAlphabet is the table both ways; it is built once and only read.
type byteAlphabet struct {
	runeOf [256]rune     // byte -> character
	utf8Of [256]string   // byte -> the character's UTF-8
	byteOf map[rune]byte // character -> byte
}

// alphabet is the GPT-2 byte alphabet. It is never written after
// initialisation.
var alphabet = newByteAlphabet()

func newByteAlphabet() *byteAlphabet {
	a := &byteAlphabet{byteOf: make(map[rune]byte, 256)}
	next := rune(256)
	for b := range 256 {
		printable := ('!' <= b && b <= '~') || (0xA1 <= b && b <= 0xAC) || (0xAE <= b && b <= 0xFF)
		r := rune(b)
		if !printable {
			r = next
			next++
		}
		a.runeOf[b] = r
		a.utf8Of[b] = string(r)
		a.byteOf[r] = byte(b)
	}
	return a
}

// appendMapped appends the byte-level spelling of raw to dst.
func appendMapped(dst []byte, raw string) []byte {
	for i := 0; i < len(raw); i++ {
		dst = append(dst, alphabet.utf8Of[raw[i]]...)
	}
	return dst
}

// appendUnmapped appends the raw bytes that a byte-level spelling stands
// for. A character outside the alphabet (possible only in a malformed
// vocabulary) is copied as its own UTF-8, which is what Hugging Face's
// ByteLevel decoder does with a token it cannot map.
func appendUnmapped(dst []byte, text string) []byte {
	for _, r := range text {
		if b, ok := alphabet.byteOf[r]; ok {
			dst = append(dst, b)
		} else {
			dst = utf8.AppendRune(dst, r)
		}
	}
	return dst
}
