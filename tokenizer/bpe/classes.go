package bpe

import "unicode"

// Character classes of the pre-tokenizer regexes. The regexes only ask four
// questions of a character: is it a letter (\p{L}), a number (\p{N}),
// punctuation (\p{P}), white space (\s), a combining mark (\p{M}, which
// only Qwen3.5's regex asks about)? Each is answered once per character of
// the text and kept in a bit set.
//
// \p{L}, \p{N} and \p{P} are Unicode general categories, taken from Go's
// unicode tables (Unicode 15.0.0 for Go 1.21 and later). llama.cpp and the
// JavaScript reference carry their own, newer tables; characters that were
// unassigned in Unicode 15.0 (CJK extension I and the scripts of Unicode 16
// and 17) are letters or numbers there and "other" here. Every character
// assigned in Unicode 15.0 is classified alike (unicode_test.go checks it
// against the JavaScript engine's tables).
//
// \s is the Unicode White_Space property, as in Rust's regex crate (Hugging
// Face tokenizers) and llama.cpp's table: it includes U+0085 NEXT LINE and
// excludes U+FEFF. JavaScript's \s differs on exactly those two characters.
const (
	classLetter uint8 = 1 << iota
	classNumber
	classPunct
	classSpace
	classMark
)

// classOther is [^\s\p{L}\p{N}]: neither white space, letter nor number.
func classOther(c uint8) bool { return c&(classLetter|classNumber|classSpace) == 0 }

// asciiClasses holds the classes of the 128 ASCII characters; it is only read.
var asciiClasses = func() (t [128]uint8) {
	for r := range rune(128) {
		t[r] = classifySlow(r)
	}
	return t
}()

func classifySlow(r rune) uint8 {
	var c uint8
	if unicode.IsLetter(r) {
		c |= classLetter
	}
	if unicode.IsNumber(r) {
		c |= classNumber
	}
	if unicode.IsPunct(r) {
		c |= classPunct
	}
	if unicode.IsSpace(r) { // White_Space, plus nothing else outside Latin-1
		c |= classSpace
	}
	if unicode.IsMark(r) {
		c |= classMark
	}
	return c
}

// classify returns the class bits of r.
func classify(r rune) uint8 {
	if r < 128 {
		return asciiClasses[r]
	}
	return classifySlow(r)
}
