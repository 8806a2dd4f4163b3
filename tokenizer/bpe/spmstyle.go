package bpe

import (
	"strings"
	"unicode/utf8"
)

// SentencePiece-style BPE (Gemma 4's vocabulary: a GGUF file with
// tokenizer.ggml.model = "gemma4", pre-tokenizer "gemma4"). Its tokens are
// raw UTF-8 with spaces written as "▁" (U+2581), as SentencePiece writes
// them, instead of GPT-2's byte alphabet, and bytes that no token spells
// are the byte tokens "<0x00>" ... "<0xFF>". llama.cpp (llm_tokenizer_bpe
// with byte_encode false, escape_whitespaces true) tokenizes such text so:
//
//  1. every space of a text fragment becomes "▁";
//  2. the fragment is cut into runs of newlines and runs of anything else
//     ([^\n]+|[\n]+): no word-level split, merges run over whole lines;
//  3. a run of newlines that is a token is that token; any other word
//     starts as its UTF-8 characters, merged pair by pair by rank;
//  4. a piece left that is not a token becomes the byte tokens of its
//     bytes (those the vocabulary has).
//
// Decoding writes a normal token's text with "▁" as a space and a byte
// token as its byte.

// spmSpace is how SentencePiece writes a space.
const spmSpace = "\u2581"

// matchNewlineRuns is [^\n]+|[\n]+: the run of newlines, or of other
// characters, that starts at i.
func matchNewlineRuns(r []rune, _ []uint8, i int) int {
	nl := r[i] == '\n'
	k := i + 1
	for k < len(r) && (r[k] == '\n') == nl {
		k++
	}
	return k
}

// escapeSpaces writes the spaces of a text fragment as "▁".
func escapeSpaces(text string) string {
	return strings.ReplaceAll(text, " ", spmSpace)
}

// spmWord appends the tokens of one word of a SentencePiece-style
// vocabulary (steps 3 and 4 above).
func (b *BPE) spmWord(s *session, ids []int, word string) []int {
	if strings.Trim(word, "\n") == "" {
		if id, ok := b.lookup[word]; ok {
			return append(ids, int(id))
		}
	}
	syms := s.symbols[:0]
	for i := 0; i < len(word); {
		_, size := utf8.DecodeRuneInString(word[i:])
		syms = append(syms, symbol{id: b.id(word[i : i+size]), prev: int32(len(syms) - 1), next: int32(len(syms) + 1), n: int32(size), start: int32(i)})
		i += size
	}
	syms[len(syms)-1].next = -1
	syms = b.runMerges(s, syms)
	for i := int32(0); i >= 0; i = syms[i].next {
		sym := syms[i]
		if sym.id >= 0 {
			ids = append(ids, int(sym.id))
			continue
		}
		for k := sym.start; k < sym.start+sym.n; k++ {
			if id := b.byteTokens[word[k]]; id >= 0 {
				ids = append(ids, int(id))
			}
		}
	}
	s.symbols = syms
	return ids
}

// spmByteTokens returns the ids of the byte tokens "<0x00>" ... "<0xFF>"
// (-1 where the vocabulary lacks one).
func (b *BPE) spmByteTokens() (t [256]int32) {
	const hex = "0123456789ABCDEF"
	for c := range 256 {
		t[c] = -1
		if id, ok := b.lookup["<0x"+hex[c>>4:c>>4+1]+hex[c&15:c&15+1]+">"]; ok {
			t[c] = id
		}
	}
	return t
}

// spmByte returns the byte a byte token "<0xXX>" stands for.
func spmByte(text string) (byte, bool) {
	if len(text) != 6 || !strings.HasPrefix(text, "<0x") || text[5] != '>' {
		return 0, false
	}
	var v byte
	for _, c := range text[3:5] {
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | byte(c-'0')
		case 'A' <= c && c <= 'F':
			v = v<<4 | byte(c-'A'+10)
		case 'a' <= c && c <= 'f':
			v = v<<4 | byte(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}
