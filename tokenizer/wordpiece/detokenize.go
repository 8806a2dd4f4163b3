package wordpiece

// cleanSpaces is the clean-up llama.cpp's detokenize does in place when a
// vocabulary has clean_spaces (Hugging Face's
// clean_up_tokenization_spaces), as three passes over the text, each of
// which compares the bytes of its input around a position:
//
//  1. a space before "?", "!", "." or "," goes;
//  2. a "'" between two spaces loses both spaces;
//  3. a space before "'s", "'m", "'re" or "'ve" goes (" 't", " 'd" and
//     " 'll" keep theirs).
//
// Pass 2 marks the space it drops after "'" with a NUL in its input, so the
// byte after it no longer sees a space before it; that is kept here too.
// The first byte of the text is never dropped.
func cleanSpaces(text []byte) []byte {
	text = cleanPass(text, func(text []byte, i int) (dropPrev, dropNext bool) {
		x := text[i]
		return text[i-1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ','), false
	})
	text = cleanPass(text, func(text []byte, i int) (dropPrev, dropNext bool) {
		drop := text[i] == '\'' && i+1 < len(text) && text[i-1] == ' ' && text[i+1] == ' '
		return drop, drop
	})
	return cleanPass(text, func(text []byte, i int) (dropPrev, dropNext bool) {
		if text[i-1] != ' ' || text[i] != '\'' || i+1 >= len(text) {
			return false, false
		}
		switch x1 := text[i+1]; {
		case x1 == 's' || x1 == 'm':
			return true, false
		case i+2 < len(text):
			x2 := text[i+2]
			return (x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e'), false
		}
		return false, false
	})
}

// cleanPass is one pass of llama.cpp's clean-up: it keeps text[0], then for
// each later byte asks drop whether to take back the byte kept before it
// and whether to skip the byte after it (which becomes a NUL in the input,
// as llama.cpp writes one there). text is rewritten in place; the result is
// a prefix of it.
func cleanPass(text []byte, drop func(text []byte, i int) (dropPrev, dropNext bool)) []byte {
	if len(text) == 0 {
		return text
	}
	n := len(text)
	total := 1
	for i := 1; i < n; i++ {
		x := text[i]
		dropPrev, dropNext := drop(text[:n], i)
		if dropPrev {
			total--
		}
		if dropNext {
			i++
			text[i] = 0
		}
		text[total] = x
		total++
	}
	return text[:total]
}
