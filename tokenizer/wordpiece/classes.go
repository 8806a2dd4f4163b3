package wordpiece

import "sort"

//go:generate go run gen_tables.go

// lowerRun maps start+k*stride to lower+k*stride for k < count.
type lowerRun struct {
	start, count, stride, lower uint32
}

// nfdRange maps every code point from first to last to nfd.
type nfdRange struct {
	first, last, nfd uint32
}

// class is the class bits of r (llama.cpp's unicode_cpt_flags_from_cpt).
func class(r rune) uint8 {
	if r < 0x80 {
		return asciiClass[r]
	}
	k := sort.Search(len(classRanges), func(k int) bool { return classRanges[k]>>8 > uint32(r) }) - 1
	return uint8(classRanges[k])
}

// lower is llama.cpp's unicode_tolower: the one code point its table maps
// r to, or r.
func lower(r rune) rune {
	if r < 0x80 {
		return rune(asciiLower[r])
	}
	c := uint32(r)
	k := sort.Search(len(lowerRuns), func(k int) bool { return lowerRuns[k].start > c }) - 1
	if k < 0 {
		return r
	}
	run := lowerRuns[k]
	if d := c - run.start; d%run.stride == 0 && d/run.stride < run.count {
		return rune(run.lower + d)
	}
	return r
}

// nfd is llama.cpp's unicode_cpts_normalize_nfd for one code point: not
// Unicode's NFD but the first code point of the decomposition, so that
// "é" becomes "e" and its accent is gone, not split off.
func nfd(r rune) rune {
	if r < 0xC0 {
		return r // the table's first entries are {0, 0, 0} and À
	}
	c := uint32(r)
	k := sort.Search(len(nfdRanges), func(k int) bool { return nfdRanges[k].first > c }) - 1
	if rg := nfdRanges[k]; c <= rg.last {
		return rune(rg.nfd)
	}
	return r
}

// isChinese reports whether r is in the CJK blocks that llama.cpp's
// WordPiece makes words of their own (its is_chinese_char, after BERT's
// _is_chinese_char; the extension range starting at 0x2B920 instead of
// 0x2B820 is theirs, from Hugging Face's Rust code).
func isChinese(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) ||
		(r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) ||
		(r >= 0x2B920 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) ||
		(r >= 0x2F800 && r <= 0x2FA1F)
}
