package tokenizer

import "strings"

// Fragment is a piece of a text being tokenized: either the bytes
// text[Start:End] still to be split into tokens (Token < 0), or a special
// token split out of the text (Token is its id).
type Fragment struct {
	Start, End int
	Token      int
}

// SplitSpecial appends to dst the fragments of text[start:end] around every
// occurrence of one special token (id, spelled special): one step of
// llama.cpp's tokenizer_st_partition, which every tokenizer here runs for each
// special token, longest first. lstrip and rstrip remove the ASCII white space
// (C's isspace) before and after each occurrence, as llama.cpp's LSTRIP and
// RSTRIP token attributes do.
func SplitSpecial(dst []Fragment, text string, start, end, id int, special string, lstrip, rstrip bool) []Fragment {
	for start < end {
		i := strings.Index(text[start:end], special)
		if i < 0 {
			break
		}
		match := start + i
		left := match
		if lstrip {
			for left > start && isSpace(text[left-1]) {
				left--
			}
		}
		if left > start {
			dst = append(dst, Fragment{Start: start, End: left, Token: -1})
		}
		dst = append(dst, Fragment{Token: id})
		start = match + len(special)
		if rstrip {
			for start < end && isSpace(text[start]) {
				start++
			}
		}
	}
	if start < end {
		dst = append(dst, Fragment{Start: start, End: end, Token: -1})
	}
	return dst
}

// isSpace is C's isspace in the "C" locale, which llama.cpp uses for
// LSTRIP/RSTRIP.
func isSpace(c byte) bool {
	return c == ' ' || ('\t' <= c && c <= '\r')
}
