package grammar

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Limits bound what a grammar may make the matcher hold, so that a grammar
// or schema from a request cannot take unbounded memory or time.
const (
	// maxSourceBytes is the largest GBNF source Parse reads.
	maxSourceBytes = 1 << 20
	// maxElements bounds the compiled grammar: characters, rule references
	// and alternative ends, after repetitions are expanded.
	maxElements = 1 << 20
	// maxRepetitions is the largest count of a {m,n} repetition, its
	// minimum and its maximum, as llama.cpp's parser refuses a larger one
	// (MAX_REPETITION_THRESHOLD); a larger maximum is refused rather than
	// read as no maximum, a looser grammar than the one written.
	maxRepetitions = 2000
	// maxNesting bounds the depth of parentheses.
	maxNesting = 256
)

// elemKind says what a compiled grammar element is.
type elemKind uint8

const (
	elemEnd   elemKind = iota // the end of an alternative
	elemChars                 // one character from a set: arg indexes Grammar.sets
	elemRef                   // a reference to rule arg
)

// elem is one element of a compiled alternative.
type elem struct {
	kind elemKind
	arg  int32
}

// parser reads GBNF as llama.cpp's llama_grammar_parser does (the same
// syntax, the same rewriting of repetitions into rules, the same limits),
// into per-rule alternatives that compile flattens.
type parser struct {
	src     string
	pos     int
	ids     map[string]int32
	names   []string
	alts    [][][]elem // alts[rule]: its alternatives; nil until defined
	defined []bool
	sets    []charset
	setIDs  map[string]int32
	count   int // elements so far, against maxElements
	depth   int
	// emptyClass is the first character class that matches no character
	// ([z-a]) and where it is, for the error of a grammar it keeps from
	// ending.
	emptyClass string
}

// Parse compiles GBNF source in llama.cpp's syntax (grammars/README.md of
// llama.cpp): rules `name ::= alternatives`, string literals, character
// classes with ranges and negation, `.`, groups, and the repetitions `*`,
// `+`, `?`, `{m}`, `{m,}` and `{m,n}`, with `#` comments. The start rule is
// `root`. Token references (`<[id]>`, `<token>`) are not supported. Errors
// wrap ErrSyntax and name the line and column, the undefined rule, or the
// left-recursive one.
func Parse(src string) (*Grammar, error) { return parse(src, true) }

// parse is Parse, with the alternatives left-factored (factor.go) or, for
// the tests that hold factoring to the grammar as written, not.
func parse(src string, factored bool) (*Grammar, error) {
	if len(src) > maxSourceBytes {
		return nil, fmt.Errorf("%w: the source is %d bytes, at most %d", ErrSyntax, len(src), maxSourceBytes)
	}
	if !utf8.ValidString(src) {
		return nil, fmt.Errorf("%w: the source is not valid UTF-8", ErrSyntax)
	}
	p := &parser{src: src, ids: map[string]int32{}, setIDs: map[string]int32{}}
	p.space(true)
	for p.pos < len(p.src) {
		if err := p.rule(); err != nil {
			return nil, err
		}
	}
	for id, ok := range p.defined {
		if !ok {
			return nil, fmt.Errorf("%w: undefined rule %q", ErrSyntax, p.names[id])
		}
	}
	root, ok := p.ids["root"]
	if !ok {
		return nil, fmt.Errorf("%w: no rule named root", ErrSyntax)
	}
	if factored {
		p.factor()
	}
	return compile(p, root)
}

func isWordChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-'
}

// space skips blanks and comments, and line breaks when newlineOK.
func (p *parser) space(newlineOK bool) {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t':
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' && p.src[p.pos] != '\r' {
				p.pos++
			}
		case newlineOK && (c == '\n' || c == '\r'):
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) peek() byte {
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *parser) name() (string, error) {
	start := p.pos
	for p.pos < len(p.src) && isWordChar(p.src[p.pos]) {
		p.pos++
	}
	if p.pos == start {
		return "", syntaxError(p.src, start, "expecting a rule name")
	}
	return p.src[start:p.pos], nil
}

// ruleID returns the id of a rule name, creating an undefined rule the
// first time a name is seen.
func (p *parser) ruleID(name string) int32 {
	if id, ok := p.ids[name]; ok {
		return id
	}
	id := int32(len(p.names))
	p.ids[name] = id
	p.names = append(p.names, name)
	p.alts = append(p.alts, nil)
	p.defined = append(p.defined, false)
	return id
}

// generated makes a new rule for a group or a repetition of rule base, named
// as llama.cpp names them (base_N).
func (p *parser) generated(base string) int32 {
	for n := len(p.names); ; n++ {
		name := base + "_" + strconv.Itoa(n)
		if _, taken := p.ids[name]; !taken {
			return p.ruleID(name)
		}
	}
}

func (p *parser) define(id int32, alts [][]elem) error {
	for _, a := range alts {
		p.count += len(a) + 1
	}
	if p.count > maxElements {
		return fmt.Errorf("%w: more than %d elements once repetitions are expanded", ErrTooComplex, maxElements)
	}
	p.alts[id], p.defined[id] = alts, true
	return nil
}

// rule parses `name ::= alternatives` and the line break that ends it.
func (p *parser) rule() error {
	start := p.pos
	name, err := p.name()
	if err != nil {
		return err
	}
	p.space(false)
	if len(p.src)-p.pos < 3 || p.src[p.pos:p.pos+3] != "::=" {
		return syntaxError(p.src, p.pos, "expecting ::= after %q", name)
	}
	id := p.ruleID(name)
	if p.defined[id] {
		return syntaxError(p.src, start, "rule %q is defined twice", name)
	}
	p.pos += 3
	p.space(true)
	if err := p.alternates(name, id, false); err != nil {
		return err
	}
	switch p.peek() {
	case '\r':
		p.pos++
		if p.peek() == '\n' {
			p.pos++
		}
	case '\n':
		p.pos++
	case 0:
	default:
		return syntaxError(p.src, p.pos, "expecting a line break or the end, found %q", p.peek())
	}
	p.space(true)
	return nil
}

// alternates parses sequences separated by | into rule id.
func (p *parser) alternates(ruleName string, id int32, nested bool) error {
	var alts [][]elem
	for {
		seq, err := p.sequence(ruleName, nested)
		if err != nil {
			return err
		}
		alts = append(alts, seq)
		if p.peek() != '|' {
			break
		}
		p.pos++
		p.space(true)
	}
	return p.define(id, alts)
}

// sequence parses the items of one alternative, expanding repetitions.
func (p *parser) sequence(ruleName string, nested bool) ([]elem, error) {
	var seq []elem
	last := -1 // where the last item's elements start; -1 before any item
	for p.pos < len(p.src) {
		start := p.pos
		switch c := p.src[p.pos]; {
		case c == '"':
			p.pos++
			last = len(seq)
			for p.peek() != '"' {
				if p.pos >= len(p.src) {
					return nil, syntaxError(p.src, start, "unterminated string literal")
				}
				at := p.pos
				r, err := p.char()
				if err != nil {
					return nil, err
				}
				if p.emptyClass == "" && r >= surrogateLo && r <= surrogateHi {
					p.emptyClass = fmt.Sprintf("%s at %s, half of a UTF-16 surrogate pair, which no UTF-8 text holds (write the character, or \\U and its code point)", p.src[at:p.pos], where(p.src, at))
				}
				seq = append(seq, elem{elemChars, p.set(charset{ranges: []rune{r, r}})})
			}
			p.pos++
		case c == '[':
			cs, err := p.class()
			if err != nil {
				return nil, err
			}
			last = len(seq)
			seq = append(seq, elem{elemChars, p.set(cs)})
		case c == '.':
			p.pos++
			last = len(seq)
			seq = append(seq, elem{elemChars, p.set(charset{negate: true})})
		case isWordChar(c):
			name, _ := p.name()
			last = len(seq)
			seq = append(seq, elem{elemRef, p.ruleID(name)})
		case c == '(':
			if p.depth >= maxNesting {
				return nil, syntaxError(p.src, start, "groups nested deeper than %d", maxNesting)
			}
			p.pos++
			p.space(true)
			id := p.generated(ruleName)
			p.depth++
			err := p.alternates(ruleName, id, true)
			p.depth--
			if err != nil {
				return nil, err
			}
			if p.peek() != ')' {
				return nil, syntaxError(p.src, p.pos, "expecting ) to close the group opened at offset %d", start)
			}
			p.pos++
			last = len(seq)
			seq = append(seq, elem{elemRef, id})
		case c == '*' || c == '+' || c == '?' || c == '{':
			lo, hi, err := p.repetition()
			if err != nil {
				return nil, err
			}
			if last < 0 || last == len(seq) {
				return nil, syntaxError(p.src, start, "%q follows nothing it could repeat", c)
			}
			if seq, err = p.repeat(ruleName, seq, last, lo, hi); err != nil {
				return nil, err
			}
			last = len(seq) // a repetition cannot be repeated again directly
		case c == '<' || c == '!':
			return nil, syntaxError(p.src, start, "token references (<[id]>, <token>, !<...>) are not supported")
		default:
			return seq, nil
		}
		p.space(nested)
	}
	return seq, nil
}

// repetition parses *, +, ? or {m}, {m,}, {m,n}; hi < 0 means no maximum.
func (p *parser) repetition() (lo, hi int, err error) {
	switch p.src[p.pos] {
	case '*':
		p.pos++
		return 0, -1, nil
	case '+':
		p.pos++
		return 1, -1, nil
	case '?':
		p.pos++
		return 0, 1, nil
	}
	start := p.pos
	p.pos++
	p.space(false)
	if lo, err = p.integer(); err != nil {
		return 0, 0, err
	}
	p.space(false)
	hi = lo
	if p.peek() == ',' {
		p.pos++
		p.space(false)
		hi = -1
		if c := p.peek(); '0' <= c && c <= '9' {
			if hi, err = p.integer(); err != nil {
				return 0, 0, err
			}
			p.space(false)
		}
	}
	if p.peek() != '}' {
		return 0, 0, syntaxError(p.src, p.pos, "expecting } to close the repetition")
	}
	p.pos++
	if lo > maxRepetitions {
		return 0, 0, syntaxError(p.src, start, "repeating at least %d times: at most %d", lo, maxRepetitions)
	}
	if hi > maxRepetitions {
		return 0, 0, syntaxError(p.src, start, "repeating at most %d times: at most %d (write {%d,} for no maximum)", hi, maxRepetitions, lo)
	}
	if hi >= 0 && hi < lo {
		return 0, 0, syntaxError(p.src, start, "repetition {%d,%d}: the maximum is below the minimum", lo, hi)
	}
	return lo, hi, nil
}

func (p *parser) integer() (int, error) {
	start := p.pos
	for p.pos < len(p.src) && '0' <= p.src[p.pos] && p.src[p.pos] <= '9' && p.pos-start < 9 {
		p.pos++
	}
	if p.pos == start {
		return 0, syntaxError(p.src, start, "expecting an integer")
	}
	if c := p.peek(); '0' <= c && c <= '9' {
		return 0, syntaxError(p.src, start, "integer too large")
	}
	n, _ := strconv.Atoi(p.src[start:p.pos])
	return n, nil
}

// repeat rewrites the item seq[last:] repeated lo to hi times (hi < 0:
// unbounded) the way llama.cpp does: the item lo times, then a chain of
// generated optional rules, S{m,n} = S^m S'(n-m) with S'(k) ::= S S'(k-1) |
// and S'(1) ::= S |, or S' ::= S S' | when unbounded.
func (p *parser) repeat(ruleName string, seq []elem, last, lo, hi int) ([]elem, error) {
	item := append([]elem(nil), seq[last:]...)
	if (lo+max(hi, 1))*len(item) > maxElements-p.count {
		return nil, fmt.Errorf("%w: a repetition of rule %q expands past %d elements", ErrTooComplex, ruleName, maxElements)
	}
	seq = seq[:last]
	for range lo {
		seq = append(seq, item...)
	}
	if hi == lo {
		return seq, nil
	}
	if hi < 0 {
		id := p.generated(ruleName)
		body := append(append([]elem(nil), item...), elem{elemRef, id})
		if err := p.define(id, [][]elem{body, nil}); err != nil {
			return nil, err
		}
		return append(seq, elem{elemRef, id}), nil
	}
	var prev int32 = -1
	for range hi - lo {
		id := p.generated(ruleName)
		body := append([]elem(nil), item...)
		if prev >= 0 {
			body = append(body, elem{elemRef, prev})
		}
		if err := p.define(id, [][]elem{body, nil}); err != nil {
			return nil, err
		}
		prev = id
	}
	return append(seq, elem{elemRef, prev}), nil
}

// char parses one character of a literal or class: a UTF-8 character or an
// escape (\x.. \u.... \U........ \t \r \n \\ \" \[ \] \-).
func (p *parser) char() (rune, error) {
	start := p.pos
	if p.src[p.pos] != '\\' {
		r, size := utf8.DecodeRuneInString(p.src[p.pos:])
		p.pos += size
		return r, nil
	}
	if p.pos+1 >= len(p.src) {
		return 0, syntaxError(p.src, start, "unexpected end after \\")
	}
	c := p.src[p.pos+1]
	p.pos += 2
	digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
	if digits == 0 {
		switch c {
		case 't':
			return '\t', nil
		case 'r':
			return '\r', nil
		case 'n':
			return '\n', nil
		case '\\', '"', '[', ']', '-':
			return rune(c), nil
		}
		return 0, syntaxError(p.src, start, "unknown escape \\%c", c)
	}
	if len(p.src)-p.pos < digits {
		return 0, syntaxError(p.src, start, "expecting %d hex digits after \\%c", digits, c)
	}
	v, err := strconv.ParseUint(p.src[p.pos:p.pos+digits], 16, 32)
	if err != nil {
		return 0, syntaxError(p.src, start, "expecting %d hex digits after \\%c", digits, c)
	}
	p.pos += digits
	if v > utf8.MaxRune {
		return 0, syntaxError(p.src, start, "code point %#x is beyond Unicode", v)
	}
	return rune(v), nil
}

// class parses [ ... ] with ranges and ^ negation.
func (p *parser) class() (charset, error) {
	start := p.pos
	p.pos++
	var cs charset
	if p.peek() == '^' {
		cs.negate = true
		p.pos++
	}
	for p.peek() != ']' {
		if p.pos >= len(p.src) {
			return cs, syntaxError(p.src, start, "unterminated character class")
		}
		lo, err := p.char()
		if err != nil {
			return cs, err
		}
		hi := lo
		if p.peek() == '-' && p.pos+1 < len(p.src) && p.src[p.pos+1] != ']' {
			p.pos++
			if hi, err = p.char(); err != nil {
				return cs, err
			}
		}
		cs.ranges = append(cs.ranges, lo, hi)
	}
	p.pos++
	if p.emptyClass == "" && cs.normalized().empty() {
		why := "which matches no character"
		if cs.onlySurrogates() {
			why = "which holds only halves of UTF-16 surrogate pairs, no character of UTF-8 text"
		}
		p.emptyClass = fmt.Sprintf("the character class %s at %s, %s", p.src[start:p.pos], where(p.src, start), why)
	}
	return cs, nil
}

// set interns a character set and returns its index.
func (p *parser) set(cs charset) int32 {
	cs = cs.normalized()
	key := cs.key()
	if id, ok := p.setIDs[key]; ok {
		return id
	}
	id := int32(len(p.sets))
	p.sets = append(p.sets, cs)
	p.setIDs[key] = id
	return id
}
