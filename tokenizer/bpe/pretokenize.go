package bpe

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// A pre-tokenizer cuts text into words before BPE runs on each word alone,
// so that merges never cross, say, a letter/digit boundary. llama.cpp
// (llm_tokenizer_bpe in src/llama-vocab.cpp) describes each vocabulary's
// pre-tokenizer as a list of regexes applied in turn: every regex splits every
// piece left by the previous one into its matches and the gaps between them
// (Hugging Face's Split with behavior "Isolated"), and no piece is ever joined
// again. The regexes use lookahead (\s+(?!\S)), which Go's regexp lacks, so
// each one is written here by hand as a matcher: a function that, given a
// piece and a position, returns where the regex's leftmost-first match
// starting at that position ends. Scanning positions left to right and
// taking the first match found is what a regex iterator does.
//
// The matchers follow the regexes' own semantics. llama.cpp runs two of the
// regexes (GPT-2's and Llama 3's) through hand-written fast paths that differ
// from the regexes on code points that its Unicode table leaves unassigned;
// the regex (and Hugging Face) behaviour is kept here.

// matcher reports where a match of its pattern that starts at rune i of a
// piece ends, or -1 if none starts there. r and c are the piece's runes and
// their class bits (same length); a match is never empty.
type matcher func(r []rune, c []uint8, i int) int

// preTokenizer is a named list of matchers applied in turn.
type preTokenizer struct {
	name   string
	stages []matcher
	spm    bool // the vocabulary is SentencePiece-style (spmstyle.go)
}

// preTokenizerKinds maps the llama.cpp names of tokenizer.ggml.pre to the
// splitter each one uses (llama_vocab::impl::load, llama.cpp of early 2025,
// plus "deepseek-r1-qwen", which later versions map to Qwen2's regex, and
// the names of node-llama-cpp 3.21.1's llama.cpp for the 2026 families:
// "qwen35" (Qwen3.5), "lfm2" (LFM2, Llama 3's regex), "gemma4" (Gemma 4's
// SentencePiece-style vocabulary, see spmstyle.go)).
// Names that llama.cpp maps to regexes not written here (tekken,
// deepseek-v3, chameleon, bloom, poro-chat, gpt3-finnish, viking) are
// unknown.
var preTokenizerKinds = map[string]string{
	"default": "default",

	"gpt-2": "gpt-2", "phi-2": "gpt-2", "mpt": "gpt-2", "olmo": "gpt-2", "jais": "gpt-2",
	"jina-es": "gpt-2", "jina-de": "gpt-2", "gigachat": "gpt-2", "jina-v1-en": "gpt-2",
	"jina-v2-es": "gpt-2", "jina-v2-de": "gpt-2", "jina-v2-code": "gpt-2", "roberta-bpe": "gpt-2",

	"llama3": "llama3", "llama-v3": "llama3", "llama-bpe": "llama3", "falcon3": "llama3",
	"dbrx": "llama3", "smaug-bpe": "llama3", "chatglm-bpe": "llama3",

	"qwen2": "qwen2", "stablelm2": "qwen2", "megrez": "qwen2", "deepseek-r1-qwen": "qwen2",

	"qwen35": "qwen35",

	"lfm2": "llama3",

	"gemma4": "gemma4",

	"deepseek-llm":   "deepseek-llm",
	"deepseek-coder": "deepseek-coder",
	"falcon":         "falcon",

	"starcoder": "starcoder", "refact": "starcoder", "command-r": "starcoder", "smollm": "starcoder",
	"codeshell": "starcoder", "exaone": "starcoder", "minerva-7b": "starcoder",

	"gpt-4o": "gpt-4o", "llama4": "gpt-4o", "kanana2": "gpt-4o", "talkie": "gpt-4o",
}

// PreTokenizers lists the pre-tokenizer names New accepts, sorted.
func PreTokenizers() []string {
	names := make([]string, 0, len(preTokenizerKinds))
	for name := range preTokenizerKinds {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// LlamaCppDefaults reports what llama.cpp derives from a pre-tokenizer name
// besides the splitter: whether whole words found in the vocabulary skip the
// merges (ignoreMerges, Llama 3's tokenizer.json "ignore_merges") and whether
// BOS is added by default (addBOS; a GGUF's tokenizer.ggml.add_bos_token
// overrides it).
func LlamaCppDefaults(pre string) (ignoreMerges, addBOS bool) {
	switch pre {
	case "llama3", "llama-v3", "llama-bpe", "falcon3", "lfm2":
		return true, true
	case "gemma4": // whatever the file says
		return false, true
	}
	return false, false
}

// newPreTokenizer returns the splitter of a llama.cpp pre-tokenizer name.
func newPreTokenizer(name string) (preTokenizer, error) {
	kind, ok := preTokenizerKinds[name]
	if !ok {
		return preTokenizer{}, fmt.Errorf("%w %q (known: %s)", ErrUnknownPreTokenizer, name, strings.Join(PreTokenizers(), ", "))
	}
	p := preTokenizer{name: name}
	switch kind {
	case "gpt-2":
		p.stages = []matcher{matchGPT2}
	case "llama3":
		p.stages = []matcher{llama3Matcher(3)}
	case "qwen2":
		p.stages = []matcher{llama3Matcher(1)}
	case "qwen35":
		p.stages = []matcher{matchQwen35}
	case "gemma4":
		p.stages, p.spm = []matcher{matchNewlineRuns}, true
	case "gpt-4o":
		p.stages = []matcher{matchGPT4o}
	case "default":
		// [\p{P}\$\+<=>\^~\|]+ | GPT-2 | \p{N}+ | [0-9][0-9][0-9]
		p.stages = []matcher{plus(isPunctOr("$+<=>^~|")), matchGPT2, plus(isNumber), threeASCIIDigits}
	case "falcon":
		// [\p{P}\$\+<=>\^~\|`]+ | GPT-2 | [0-9][0-9][0-9]
		p.stages = []matcher{plus(isPunctOr("$+<=>^~|`")), matchGPT2, threeASCIIDigits}
	case "starcoder":
		// \p{N} | GPT-2
		p.stages = []matcher{one(isNumber), matchGPT2}
	case "deepseek-coder":
		// [\r\n] | \s?\p{L}+ | \s?\p{P}+ | [一-龥ࠀ-一가-퟿]+ | \p{N}
		p.stages = []matcher{one(isCRLF), spacePlus(isLetter), spacePlus(isPunct), plus(isDeepSeekCJK), one(isNumber)}
	case "deepseek-llm":
		// [\r\n] | \s?[A-Za-zµÀ-Ö...]+ | \s?[!-/:-~！-／：-～‘-‟　-。]+ | \s+$ |
		// [一-龥ࠀ-一가-퟿]+ | \p{N}+
		p.stages = []matcher{one(isCRLF), spacePlus(isDeepSeekLetter), spacePlus(isDeepSeekPunct),
			trailingSpace, plus(isDeepSeekCJK), plus(isNumber)}
	}
	return p, nil
}

// splitScratch holds the per-call buffers of split.
type splitScratch struct {
	runes      []rune
	classes    []uint8
	offsets    []int // byte offset of each rune, then len(text)
	cuts, next []int // piece boundaries, in runes
}

// split cuts text into words and calls word with each word's byte range.
func (p *preTokenizer) split(s *splitScratch, text string, word func(start, end int)) {
	s.runes, s.classes, s.offsets = s.runes[:0], s.classes[:0], s.offsets[:0]
	for i, r := range text {
		s.runes = append(s.runes, r)
		s.classes = append(s.classes, classify(r))
		s.offsets = append(s.offsets, i)
	}
	n := len(s.runes)
	if n == 0 {
		return
	}
	s.offsets = append(s.offsets, len(text))
	s.cuts = append(s.cuts[:0], 0, n)
	for _, m := range p.stages {
		s.next = refine(s.next[:0], s.cuts, m, s.runes, s.classes)
		s.cuts, s.next = s.next, s.cuts
	}
	for k := 0; k+1 < len(s.cuts); k++ {
		word(s.offsets[s.cuts[k]], s.offsets[s.cuts[k+1]])
	}
}

// refine splits every piece between consecutive cuts into the matches of m
// and the gaps between them, appending the new cuts to dst.
func refine(dst, cuts []int, m matcher, r []rune, c []uint8) []int {
	dst = append(dst, cuts[0])
	for k := 0; k+1 < len(cuts); k++ {
		a, b := cuts[k], cuts[k+1]
		pr, pc := r[a:b], c[a:b]
		for i := 0; i < len(pr); {
			e := m(pr, pc, i)
			if e <= i {
				i++
				continue
			}
			if dst[len(dst)-1] != a+i {
				dst = append(dst, a+i) // close the gap before the match
			}
			dst = append(dst, a+e)
			i = e
		}
		if dst[len(dst)-1] != b {
			dst = append(dst, b) // close the trailing gap
		}
	}
	return dst
}

// matchGPT2 is GPT-2's regex:
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// (llama.cpp writes it without the final \s+; a white-space character that
// the rest leaves unmatched becomes a one-character gap, the same piece.)
func matchGPT2(r []rune, c []uint8, i int) int {
	n := len(r)
	if r[i] == '\'' && i+1 < n {
		switch r[i+1] {
		case 's', 't', 'm', 'd':
			return i + 2
		}
		if i+2 < n {
			a, b := r[i+1], r[i+2]
			if (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') {
				return i + 3
			}
		}
	}
	// " ?X+": the optional space belongs to the run that follows it.
	j := i
	if r[i] == ' ' && i+1 < n {
		j = i + 1
	}
	switch cj := c[j]; {
	case cj&classLetter != 0:
		return runOf(c, j, classLetter)
	case cj&classNumber != 0:
		return runOf(c, j, classNumber)
	case classOther(cj):
		return runOther(c, j)
	}
	return matchSpaces(c, i)
}

// matchSpaces matches \s+(?!\S)|\s+ at i, where r[i] is white space: the
// whole run if it ends the piece or is one character long, else all of it
// but the last character, which is left to start the next word.
func matchSpaces(c []uint8, i int) int {
	k := runOf(c, i, classSpace)
	if k == len(c) || k-i == 1 {
		return k
	}
	return k - 1
}

// llama3Matcher is Llama 3's regex (maxDigits 3) and Qwen2's (maxDigits 1):
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//	 ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// The case-insensitive contractions are ASCII-only, as llama.cpp and
// transformers.js rewrite them ('[sS] ...).
func llama3Matcher(maxDigits int) matcher {
	return func(r []rune, c []uint8, i int) int {
		n, ch, ci := len(r), r[i], c[i]
		if k := contraction(r, i); k > i {
			return k
		}
		// [^\r\n\p{L}\p{N}]?\p{L}+
		if ci&classLetter != 0 {
			return runOf(c, i+1, classLetter)
		}
		if ch != '\r' && ch != '\n' && ci&classNumber == 0 && i+1 < n && c[i+1]&classLetter != 0 {
			return runOf(c, i+2, classLetter)
		}
		return matchTail(r, c, i, maxDigits, "\r\n")
	}
}

// matchQwen35 is Qwen3.5's regex, Qwen2's with combining marks (\p{M})
// joined to the letters' runs and kept out of the punctuation's:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}|
//	 ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// So "nai\u0308ve" is one word, where Qwen2's regex cuts it at the mark.
func matchQwen35(r []rune, c []uint8, i int) int {
	const word = classLetter | classMark
	n, ch, ci := len(r), r[i], c[i]
	if k := contraction(r, i); k > i {
		return k
	}
	if ci&word != 0 {
		return runOf(c, i+1, word)
	}
	if ch != '\r' && ch != '\n' && ci&classNumber == 0 && i+1 < n && c[i+1]&word != 0 {
		return runOf(c, i+2, word)
	}
	if ci&classNumber != 0 {
		return i + 1
	}
	// " ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"
	other := func(c uint8) bool { return c&(word|classNumber|classSpace) == 0 }
	j := i
	if ch == ' ' && i+1 < n && other(c[i+1]) {
		j = i + 1
	}
	if other(c[j]) {
		k := j + 1
		for k < n && other(c[k]) {
			k++
		}
		for k < n && (r[k] == '\r' || r[k] == '\n') {
			k++
		}
		return k
	}
	return matchSpacesCRLF(r, c, i)
}

// matchTail matches, at i where no word starts, the alternatives the
// llama3, qwen2 and gpt-4o regexes share after their words:
//
//	\p{N}{1,maxDigits}| ?[^\s\p{L}\p{N}]+[trail]*|\s*[\r\n]+|\s+(?!\S)|\s+
func matchTail(r []rune, c []uint8, i, maxDigits int, trail string) int {
	n := len(r)
	if c[i]&classNumber != 0 {
		k := i + 1
		for k < n && k-i < maxDigits && c[k]&classNumber != 0 {
			k++
		}
		return k
	}
	j := i
	if r[i] == ' ' && i+1 < n && classOther(c[i+1]) {
		j = i + 1
	}
	if classOther(c[j]) {
		k := runOther(c, j)
		for k < n && strings.ContainsRune(trail, r[k]) {
			k++
		}
		return k
	}
	// r[i] is white space. \s*[\r\n]+ ends after the run's last CR or LF.
	return matchSpacesCRLF(r, c, i)
}

// matchGPT4o is the gpt-4o pre-tokenizer (o200k: Phi-4-mini, Llama 4) as
// llama.cpp runs it. Its tokenizer.json regex,
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
//	\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// is rewritten by llama.cpp (llama-vocab.cpp, LLAMA_VOCAB_PRE_TYPE_GPT4O)
// for its std::regex, which knows no case classes: an "upper" letter is a
// letter that is not a-z, a "lower" one a letter that is not A-Z, and
// marks (\p{M}) are neither. So outside ASCII every letter is both, as Lm
// and Lo are in the original, and a word is cut only where ASCII case
// says: "HelloWorld" is "Hello", "World". One consequence differs from
// Hugging Face: a capitalised word that starts with a non-ASCII capital
// ("ÉCOLE") is "É", "COLE" in llama.cpp (the regex backtracks to the last
// letter that may be lower case), "ÉCOLE" in Hugging Face; and a combining
// mark ends a word here. The engine follows llama.cpp, the reference.
func matchGPT4o(r []rune, c []uint8, i int) int {
	n := len(r)
	// [^\r\n\p{L}\p{N}]? before a word: the prefix is taken only when a
	// letter follows (without it the word could not start here either).
	s := i
	if c[i]&(classLetter|classNumber) == 0 && r[i] != '\r' && r[i] != '\n' && i+1 < n && c[i+1]&classLetter != 0 {
		s = i + 1
	}
	if c[s]&classLetter != 0 {
		return contraction(r, gpt4oWord(r, c, s))
	}
	return matchTail(r, c, i, 3, "\r\n/")
}

// gpt4oWord returns the end of the word of letters starting at s (a
// letter): the first two alternatives of matchGPT4o without their prefix
// and contraction. U* L+ first, U and L being the rewritten case classes:
// U* takes the letters up to the first a-z (j); if one is there, L+ takes
// it and the letters after it up to an A-Z; else the regex backtracks to
// the last letter before j that is not A-Z (only a non-ASCII letter can
// be), and L+ is that letter. With none, U+ L* takes the run of A-Z up to
// j.
func gpt4oWord(r []rune, c []uint8, s int) int {
	n := len(r)
	j := s
	for j < n && c[j]&classLetter != 0 && !('a' <= r[j] && r[j] <= 'z') {
		j++
	}
	if j < n && 'a' <= r[j] && r[j] <= 'z' {
		k := j + 1
		for k < n && c[k]&classLetter != 0 && !('A' <= r[k] && r[k] <= 'Z') {
			k++
		}
		return k
	}
	for k := j - 1; k >= s; k-- {
		if r[k] >= 128 {
			return k + 1
		}
	}
	return j
}

// contraction returns the end of (?i:'s|'t|'re|'ve|'m|'ll|'d)? at i: i
// when none is there.
func contraction(r []rune, i int) int {
	n := len(r)
	if i+1 >= n || r[i] != '\'' {
		return i
	}
	a := lowerASCII(r[i+1])
	switch a {
	case 's', 't', 'm', 'd':
		return i + 2
	}
	if i+2 < n {
		b := lowerASCII(r[i+2])
		if (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') {
			return i + 3
		}
	}
	return i
}

// matchSpacesCRLF matches \s*[\r\n]+|\s+(?!\S)|\s+ at i, where r[i] is
// white space: up to the run's last CR or LF, else as matchSpaces.
func matchSpacesCRLF(r []rune, c []uint8, i int) int {
	k, last := i, -1
	for k < len(r) && c[k]&classSpace != 0 {
		if r[k] == '\r' || r[k] == '\n' {
			last = k
		}
		k++
	}
	if last >= 0 {
		return last + 1
	}
	return matchSpaces(c, i)
}

func lowerASCII(r rune) rune {
	if 'A' <= r && r <= 'Z' {
		return r + ('a' - 'A')
	}
	return r
}

// runOf returns the end of the run of characters with class bit bit from i.
func runOf(c []uint8, i int, bit uint8) int {
	for i < len(c) && c[i]&bit != 0 {
		i++
	}
	return i
}

// runOther returns the end of the run of [^\s\p{L}\p{N}] from i.
func runOther(c []uint8, i int) int {
	for i < len(c) && classOther(c[i]) {
		i++
	}
	return i
}

// charPred is a character class of a regex.
type charPred func(r rune, c uint8) bool

// plus is X+.
func plus(x charPred) matcher {
	return func(r []rune, c []uint8, i int) int {
		k := i
		for k < len(r) && x(r[k], c[k]) {
			k++
		}
		if k == i {
			return -1
		}
		return k
	}
}

// one is X.
func one(x charPred) matcher {
	return func(r []rune, c []uint8, i int) int {
		if x(r[i], c[i]) {
			return i + 1
		}
		return -1
	}
}

// spacePlus is \s?X+ (no class X here contains white space).
func spacePlus(x charPred) matcher {
	rest := plus(x)
	return func(r []rune, c []uint8, i int) int {
		if c[i]&classSpace != 0 {
			if i+1 < len(r) {
				return rest(r, c, i+1)
			}
			return -1
		}
		return rest(r, c, i)
	}
}

// threeASCIIDigits is [0-9][0-9][0-9].
func threeASCIIDigits(r []rune, _ []uint8, i int) int {
	if i+3 <= len(r) && isDigit(r[i]) && isDigit(r[i+1]) && isDigit(r[i+2]) {
		return i + 3
	}
	return -1
}

func isDigit(r rune) bool { return '0' <= r && r <= '9' }

// trailingSpace is \s+$: the white space that ends the piece.
func trailingSpace(_ []rune, c []uint8, i int) int {
	for k := i; k < len(c); k++ {
		if c[k]&classSpace == 0 {
			return -1
		}
	}
	return len(c)
}

func isLetter(_ rune, c uint8) bool { return c&classLetter != 0 }
func isNumber(_ rune, c uint8) bool { return c&classNumber != 0 }
func isPunct(_ rune, c uint8) bool  { return c&classPunct != 0 }
func isCRLF(r rune, _ uint8) bool   { return r == '\r' || r == '\n' }

// isPunctOr is [\p{P}...] with the ASCII characters of extra added.
func isPunctOr(extra string) charPred {
	return func(r rune, c uint8) bool {
		return c&classPunct != 0 || (r < utf8.RuneSelf && strings.ContainsRune(extra, r))
	}
}

// The DeepSeek classes below are explicit code point ranges, which
// llama.cpp matches with std::wregex after replacing every non-ASCII
// white-space character by U+000B: such a character therefore never belongs
// to them, even where a range spans it (U+3000 in 　-。, U+2000..U+205F and
// U+3000 in ࠀ-一).

// isDeepSeekCJK is [一-龥ࠀ-一가-퟿]: U+4E00..U+9FA5, U+0800..U+4E00,
// U+AC00..U+D7FF.
func isDeepSeekCJK(r rune, c uint8) bool {
	return ((0x0800 <= r && r <= 0x9FA5) || (0xAC00 <= r && r <= 0xD7FF)) && c&classSpace == 0
}

// isDeepSeekPunct is [!-/:-~！-／：-～‘-‟　-。]. Note that :-~ spans the
// ASCII letters.
func isDeepSeekPunct(r rune, c uint8) bool {
	switch {
	case '!' <= r && r <= '/', ':' <= r && r <= '~':
		return true
	case 0xFF01 <= r && r <= 0xFF0F, 0xFF1A <= r && r <= 0xFF5E, 0x2018 <= r && r <= 0x201F, 0x3000 <= r && r <= 0x3002:
		return c&classSpace == 0
	}
	return false
}

// deepSeekLetters is the letter class of deepseek-llm's second regex,
// [A-Za-zµÀ-ÖØ-öø-ƺ...𞤀-𞥃]: a subset of the cased letters (Lu, Ll, Lt),
// written out as code points because several of its characters (U+1F7D,
// U+1FBE, U+1FD3, U+1FDB, U+2126, U+212A) change under Unicode
// normalisation. Sorted and disjoint.
var deepSeekLetters = [][2]rune{
	{0x0041, 0x005A}, {0x0061, 0x007A}, {0x00B5, 0x00B5}, {0x00C0, 0x00D6},
	{0x00D8, 0x00F6}, {0x00F8, 0x01BA}, {0x01BC, 0x01BF}, {0x01C4, 0x0293},
	{0x0295, 0x02AF}, {0x0370, 0x0373}, {0x0376, 0x0377}, {0x037B, 0x037D},
	{0x037F, 0x037F}, {0x0386, 0x0386}, {0x0388, 0x038A}, {0x038C, 0x038C},
	{0x038E, 0x03A1}, {0x03A3, 0x03F5}, {0x03F7, 0x0481}, {0x048A, 0x052F},
	{0x0531, 0x0556}, {0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD},
	{0x1C90, 0x1CBA}, {0x1CBD, 0x1CBF}, {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77},
	{0x1D79, 0x1D9A}, {0x1E00, 0x1F15}, {0x1F18, 0x1F1D}, {0x1F20, 0x1F45},
	{0x1F48, 0x1F4D}, {0x1F50, 0x1F57}, {0x1F59, 0x1F59}, {0x1F5B, 0x1F5B},
	{0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4}, {0x1FB6, 0x1FBC},
	{0x1FBE, 0x1FBE}, {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3},
	{0x1FD6, 0x1FDB}, {0x1FE0, 0x1FEC}, {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC},
	{0x2102, 0x2102}, {0x2107, 0x2107}, {0x210A, 0x2113}, {0x2115, 0x2115},
	{0x2119, 0x211D}, {0x2124, 0x2124}, {0x2126, 0x2126}, {0x2128, 0x2128},
	{0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139}, {0x213C, 0x213F},
	{0x2145, 0x2149}, {0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B},
	{0x2C7E, 0x2CE4}, {0x2CEB, 0x2CEE}, {0x2CF2, 0x2CF3}, {0xA640, 0xA66D},
	{0xA680, 0xA69B}, {0xA722, 0xA76F}, {0xA771, 0xA787}, {0xA78B, 0xA78E},
	{0xAB70, 0xABBF}, {0xFB00, 0xFB06}, {0xFB13, 0xFB17}, {0xFF21, 0xFF3A},
	{0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
	{0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
}

func isDeepSeekLetter(r rune, _ uint8) bool {
	_, found := slices.BinarySearchFunc(deepSeekLetters, r, func(rg [2]rune, r rune) int {
		switch {
		case rg[1] < r:
			return -1
		case rg[0] > r:
			return 1
		}
		return 0
	})
	return found
}
