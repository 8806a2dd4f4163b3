package jsonschema

import "fmt"

// A pattern is matched against a JSON string, which ECMAScript holds as
// UTF-16 but the generated text holds as UTF-8, where no surrogate code
// point can appear. So a \u escape of a surrogate means something only as
// half of a pair: \uD83D\uDE00 is the one character U+1F600 (as the u flag
// reads it, escape joins them), and a class of high surrogates right
// before a class of low ones ([\uD800-\uDBFF][\uDC00-\uDFFF], ES5's "any
// astral character") is the class of the characters those pairs encode.
// Any other surrogate escape is refused: dropped, it would leave a looser
// grammar than the pattern (or an empty class).

var (
	surrogates     = charset{{0xD800, 0xDFFF}}
	highSurrogates = charset{{0xD800, 0xDBFF}}
	lowSurrogates  = charset{{0xDC00, 0xDFFF}}
)

// maxAstralRanges bounds the ranges a pair of surrogate classes may encode
// (each high surrogate with a low class short of all of DC00–DFFF is
// ranges of its own).
const maxAstralRanges = 256

// loneSurrogate records the first surrogate escape of the atom being
// parsed that is not half of an escaped pair: its text and offset.
type loneSurrogate struct {
	text string
	at   int
}

// noteSurrogate records the escape src[start:p.i] of the surrogate v.
func (p *patternParser) noteSurrogate(v rune, start int) {
	if surrogates.contains(v) && p.surr.text == "" {
		p.surr = loneSurrogate{string(p.src[start:p.i]), start}
	}
}

// surrogateError is the error about the escape recorded.
func (p *patternParser) surrogateError() error {
	return &patternError{errPatternUnsupported, fmt.Sprintf("at offset %d: %s is half of a UTF-16 surrogate pair, which no UTF-8 text holds; write the character or the pair",
		p.surr.at, p.surr.text)}
}

// lowSurrogatePair is the low surrogate escaped right after a high one at
// src[p.i:] (\uDE00 after \uD83D), and whether there is one.
func (p *patternParser) lowSurrogatePair() (rune, bool) {
	if p.i+6 > len(p.src) || p.src[p.i] != '\\' || p.src[p.i+1] != 'u' {
		return 0, false
	}
	v, ok := hexValue(p.src[p.i+2 : p.i+6])
	return v, ok && lowSurrogates.contains(v)
}

func hexValue(digits []rune) (rune, bool) {
	var v rune
	for _, d := range digits {
		switch {
		case d >= '0' && d <= '9':
			v = v<<4 | (d - '0')
		case d >= 'a' && d <= 'f':
			v = v<<4 | (d - 'a' + 10)
		case d >= 'A' && d <= 'F':
			v = v<<4 | (d - 'A' + 10)
		default:
			return 0, false
		}
	}
	return v, true
}

// pairCode is the character the surrogates hi, lo encode.
func pairCode(hi, lo rune) rune { return 0x10000 + (hi-0xD800)<<10 + (lo - 0xDC00) }

// surrogatePairs parses, after the unquantified atom whose characters are
// high (all high surrogates), the unquantified class of low surrogates
// that must follow, and returns the atom of the characters the pairs
// encode. Anything else is the error about the recorded escape.
func (p *patternParser) surrogatePairs(high charset) (string, charset, error) {
	first := p.surr
	if len(high.minus(highSurrogates)) > 0 || p.i >= len(p.src) || p.src[p.i] != '[' && p.src[p.i] != '\\' {
		return "", nil, p.surrogateError()
	}
	p.surr = loneSurrogate{}
	_, low, err := p.atom()
	if err != nil {
		return "", nil, err
	}
	if len(low.minus(lowSurrogates)) > 0 {
		if p.surr.text == "" {
			p.surr = first
		}
		return "", nil, p.surrogateError()
	}
	if _, _, ok, err := p.quantifier(); err != nil || ok {
		if err != nil {
			return "", nil, err
		}
		return "", nil, p.errorf(errPatternUnsupported, "a quantifier on the low half of a surrogate pair; put the pair in a group to repeat it")
	}
	p.surr = loneSurrogate{}
	var out charset
	whole := len(low) == 1 && low[0] == lowSurrogates[0]
	for _, h := range high {
		if whole {
			out = append(out, rng{pairCode(h.lo, 0xDC00), pairCode(h.hi, 0xDFFF)})
			continue
		}
		for c := h.lo; c <= h.hi; c++ {
			for _, l := range low {
				out = append(out, rng{pairCode(c, l.lo), pairCode(c, l.hi)})
			}
			if len(out) > maxAstralRanges {
				return "", nil, p.errorf(errPatternLimit, "a class of high surrogates and one of low surrogates encoding more than %d ranges of characters", maxAstralRanges)
			}
		}
	}
	out = out.union(nil)
	g, _ := out.gbnf()
	return g, out, nil
}
