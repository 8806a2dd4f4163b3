package chat

import (
	"maps"
	"slices"
	"strings"

	"github.com/wasmlm/wasmlm/grammar/jsonschema"
)

// A reply sampled under a response_format grammar (a JSON schema, a JSON
// object) is the reply's content. Most templates' replies are their
// content from the first token; gpt-oss's harmony reply is not: it opens
// channels, reasons in the analysis channel, and writes its answer in the
// final channel. For it, as llama.cpp's gpt-oss handler does
// (common/chat.cpp), the grammar lets the analysis messages through and
// holds the final channel's message to the content's rule.

// Harmony's markers, as a reply writes them after the prompt's
// "<|start|>assistant".
const (
	harmonyChannel = "<|channel|>"
	harmonyMessage = "<|message|>"
	harmonyEnd     = "<|end|>"
	harmonyStart   = "<|start|>assistant"
)

// WrapsContent reports whether a reply of the template holds its content
// inside other text, so that a grammar of the content must be placed by
// ContentGrammar: gpt-oss's harmony format.
func (t Template) WrapsContent() bool {
	return t.f != nil && t.f.name == "gpt-oss"
}

// ContentGrammar adds to conv the root rule of a reply of the template
// whose content matches the rule named content (already in conv), and
// returns conv's grammar. For gpt-oss (WrapsContent): any number of
// analysis messages ("<|channel|>analysis<|message|>", text without
// "<|end|>", then "<|end|><|start|>assistant"), then
// "<|channel|>final<|message|>" and the content, the reply
// ReasoningParser reads. (llama.cpp's grammar also allows a stray
// "<|channel|>commentary" before a channel and a content type such as
// " <|constrain|>json" after "final"; the reasoning parser here would
// take such a reply for content, so the grammar leaves them out.) For
// other templates the root is the content.
func (t Template) ContentGrammar(conv *jsonschema.Converter, content string) string {
	return contentGrammar(conv, t.WrapsContent(), content)
}

func contentGrammar(conv schemaConverter, harmony bool, content string) string {
	if !harmony {
		conv.Rule("root", content)
		return conv.GBNF()
	}
	conv.Rule("root", harmonyAnalysis(conv)+"* "+gbnfLiteral(harmonyChannel+"final"+harmonyMessage)+" "+content)
	return conv.GBNF()
}

// harmonyAnalysis adds the rule of one analysis message and the opening
// of the next message, and returns its name.
func harmonyAnalysis(conv schemaConverter) string {
	text := excludingGBNF(conv, "harmony-text", harmonyEnd)
	return conv.Rule("harmony-analysis", gbnfLiteral(harmonyChannel+"analysis"+harmonyMessage)+" "+text+" "+
		gbnfLiteral(harmonyEnd+harmonyStart))
}

// excludingGBNF adds rules named prefix, prefix-1, ... matching every text
// that does not contain delim, and returns the first one's name: the
// complement of delim's matching automaton (the states that have matched
// a part of it), as llama.cpp's gbnf_excluding_grammar writes it for its
// "until" parsers. Each state's rule is empty, or one character and the
// state it leads to; the character that would complete delim has none.
func excludingGBNF(conv schemaConverter, prefix, delim string) string {
	// next[q][c]: the state after character c in state q (q characters of
	// delim matched), KMP's automaton over delim's own characters.
	var alphabet []byte
	for i := 0; i < len(delim); i++ {
		if !slices.Contains(alphabet, delim[i]) {
			alphabet = append(alphabet, delim[i])
		}
	}
	slices.Sort(alphabet)
	next := func(q int, c byte) int {
		s := delim[:q] + string(c)
		for k := min(len(s), len(delim)); k > 0; k-- {
			if strings.HasSuffix(s, delim[:k]) {
				return k
			}
		}
		return 0
	}
	name := func(q int) string {
		if q == 0 {
			return prefix
		}
		return prefix + "-" + string(rune('0'+q/10)) + string(rune('0'+q%10))
	}
	// Rules are added last state first, so that each rule's name is known
	// when a state refers to it (the converter keeps the names given).
	for q := len(delim) - 1; q >= 0; q-- {
		var specific []byte
		buckets := map[int][]byte{}
		for _, c := range alphabet {
			d := next(q, c)
			if d != 0 {
				specific = append(specific, c)
			}
			if d != 0 && d < len(delim) {
				buckets[d] = append(buckets[d], c)
			}
		}
		body := "|"
		for _, d := range slices.Sorted(maps.Keys(buckets)) {
			body += " " + charClass(buckets[d], false) + " " + name(d) + " |"
		}
		body += " " + charClass(specific, true) + " " + name(0)
		conv.Rule(name(q), body)
	}
	return name(0)
}

// charClass is a GBNF character class of ASCII characters cs (negated:
// every character but them).
func charClass(cs []byte, negate bool) string {
	var b strings.Builder
	b.WriteByte('[')
	if negate {
		b.WriteByte('^')
	}
	for _, c := range cs {
		switch c {
		case '\\', ']', '[', '^', '-':
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	b.WriteByte(']')
	return b.String()
}
