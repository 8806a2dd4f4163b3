// Package grammar holds generated text to a formal grammar: JSON for a
// schema, a tool call, any language written in GBNF.
//
// Parse reads GBNF as llama.cpp does (grammars/README.md of llama.cpp: the
// same syntax, the same rewriting of repetitions, the same repetition
// threshold), so grammars written for llama.cpp work unchanged; token
// references (<[id]>) are the one construct it refuses. Alternatives that
// begin alike are merged, through the rules that begin them (an enum's
// values, an anyOf's objects become a trie), and a grammar
// no finite text matches, or with a rule wider than the matcher holds, is
// refused (finite.go). The matcher is a
// pushdown recognizer over code points, like llama.cpp's: a parse is a
// stack of grammar positions, an ambiguous grammar has several at once.
// Past the 4,096 parses the matcher holds, a text keeps those that can
// finish soonest (prune.go): what may follow is narrowed, never failed.
//
// What is ours is how a token mask is made. Stacks are hash-consed, sets of
// stacks interned, and a byte-level state (a set plus an unfinished UTF-8
// character) memoizes its transition for each byte. The vocabulary is a
// byte trie in depth-first order (Vocab, built once per tokenizer), and a
// mask is one walk of it that follows memoized transitions and skips, in
// one jump, every token under a rejected prefix. Masks are kept per state,
// so a JSON string's characters, a number's digits, the same place in the
// next object of an array cost a lookup after the first time; a Grammar
// keeps its tables across generations (bounded: see the limits in
// match.go and maxMaskBytes; full tables are renewed, renew.go).
//
// Constraint is the logit processor a generation uses: Mask before the
// sampling chain (so temperature, top-k/top-p/min-p and seeds work as
// usual), Accept after each token. End-of-generation tokens are allowed
// exactly where the text is a whole match. Given the tokens it may still
// write, Mask also bans those after which the shortest way to a whole match
// would not fit, so a generation cut by max_tokens still ends in a whole
// match whenever the budget can hold one (budget.go).
package grammar
