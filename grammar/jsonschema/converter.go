package jsonschema

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Converter gathers the rules of several schemas, and rules written by hand,
// into one grammar: a tool call's grammar holds every tool's parameters.
// Rule names never clash: like llama.cpp, a name already taken by another
// rule gets a number appended. The zero Converter is not usable: call
// NewConverter.
type Converter struct {
	rules map[string]string
	// family is each rule's name as asked for, sanitised (its name but
	// for an appended number); same finds a family's rule with a body.
	family map[string]string
	same   map[[2]string]string
	next   map[string]int // a family's next number to try
	// pending are names reserved for "$ref" targets being converted,
	// which rules inside them may already refer to; claim is the one
	// whose rule is being added.
	pending map[string]bool
	claim   string
	size    int   // bytes of the rules' text, for MaxGrammarBytes
	err     error // the first limit hit, sticky for the current Add
	// where is the schema each rule was made for (the first one, when
	// schemas share a rule), for Pointer and Keyword.
	where map[string]place
}

// place is where in a schema a rule was made: the subschema's JSON pointer,
// and the keyword whose alternatives the rule holds ("enum", "anyOf",
// "oneOf"; "" for none).
type place struct{ ptr, keyword string }

// NewConverter returns a Converter holding llama.cpp's "space" rule.
func NewConverter() *Converter {
	c := &Converter{rules: map[string]string{}, family: map[string]string{}, same: map[[2]string]string{},
		next: map[string]int{}, pending: map[string]bool{}, where: map[string]place{}}
	c.set("space", spaceRule, "space")
	return c
}

// ToGBNF converts one schema to a grammar in llama.cpp's GBNF, whose rule
// "root" matches the schema's JSON texts: those llama.cpp's converter
// would generate for it, with the differences the package doc lists.
func ToGBNF(schema []byte) (string, error) {
	c := NewConverter()
	if _, err := c.Add("", schema); err != nil {
		return "", err
	}
	return c.GBNF(), nil
}

// Add converts schema and returns the name of the rule matching its values.
// name is a prefix hint for the schema's rules (characters other than
// ASCII letters, digits and "-" become "-"); "" or "root" makes the schema
// the grammar's root, as ToGBNF does. A schema whose values are those of a
// built-in rule returns that rule ("string", "integer"). On error the
// Converter is left as it was.
func (c *Converter) Add(name string, schema []byte) (rule string, err error) {
	saved := *c
	saved.rules, saved.family, saved.same, saved.next = maps.Clone(c.rules), maps.Clone(c.family), maps.Clone(c.same), maps.Clone(c.next)
	saved.where = maps.Clone(c.where)
	defer func() {
		if err != nil {
			*c = saved
			c.err, c.claim = nil, ""
			clear(c.pending)
		}
	}()
	root, err := decode(schema)
	if err != nil {
		return "", err
	}
	if name == "root" {
		name = ""
	}
	v := &visitor{c: c, root: root, refs: map[string]*ref{}}
	rule, err = v.visit(root, name, "")
	if err == nil {
		err = c.err
	}
	if err == nil && len(c.pending) > 0 {
		err = &Error{Msg: "internal error: unresolved rules", Err: ErrInvalid}
	}
	return rule, err
}

// Pointer is the JSON pointer (RFC 6901, "" for the root) of the first
// subschema (or object property) whose values rule matches; false for a
// rule no subschema returned ("space", those written with Rule). A host
// that finds fault with a rule of the grammar (it can never end) names the
// schema's field with it.
func (c *Converter) Pointer(rule string) (string, bool) {
	p, ok := c.where[rule]
	return p.ptr, ok
}

// Keyword is the keyword of the subschema at Pointer(rule) whose
// alternatives rule holds — "enum", "anyOf" or "oneOf" — or "": a host
// that finds a rule too wide names the keyword that made it so.
func (c *Converter) Keyword(rule string) string { return c.where[rule].keyword }

// note records that rule was made for the schema at ptr (its alternatives
// those of keyword), unless it was made for another first.
func (c *Converter) note(rule, ptr, keyword string) {
	if _, ok := c.where[rule]; !ok {
		c.where[rule] = place{ptr, keyword}
	}
}

// Rule adds a rule written in GBNF by the caller, such as
// `root ::= "<tool_call>" space call "</tool_call>"` (name "root", body
// after "::="), and returns its name: name sanitised, with "-" appended
// when it is one of llama.cpp's built-in rule names other than root
// ("string", "value", ...), and a number when another rule has it. The
// body may use the rules Add returned and "space".
func (c *Converter) Rule(name, body string) string {
	if name != "root" && reserved(name) {
		name += "-"
	}
	return c.addRule(name, body)
}

// GBNF returns every rule, one per line ("name ::= body"), sorted by name
// as llama.cpp prints them. The caller must have added a rule named root
// (Add with name "" does).
func (c *Converter) GBNF() string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(c.rules)) {
		b.WriteString(name)
		b.WriteString(" ::= ")
		b.WriteString(c.rules[name])
		b.WriteByte('\n')
	}
	return b.String()
}

// JSONObject returns the grammar of OpenAI's response_format
// {"type": "json_object"}: any JSON object, the grammar ToGBNF gives the
// schema {"type": "object"} (llama.cpp's too). It is a function, not a
// constant, so that it is built from the converter's own rules.
func JSONObject() string {
	c := NewConverter()
	c.addPrimitive("root", primitives["object"])
	return c.GBNF()
}

// sanitizeRuleName is name with every run of characters other than ASCII
// letters, digits and '-' replaced by one '-': llama.cpp's
// re.sub(r'[^a-zA-Z0-9-]+', '-', name). (Not a regexp: package regexp
// would add 120 KB, gzipped, to the edge worker.)
func sanitizeRuleName(name string) string {
	var b strings.Builder
	run := false
	for _, r := range name {
		if r == '-' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' {
			b.WriteRune(r)
			run = false
		} else if !run {
			b.WriteByte('-')
			run = true
		}
	}
	return b.String()
}

// addRule is llama.cpp's _add_rule: the rule gets name (sanitised) unless
// another rule has it, then name0, name1, ... the first free one; a rule
// of the same name and body is shared.
func (c *Converter) addRule(name, body string) string {
	esc := sanitizeRuleName(name)
	if key, ok := c.same[[2]string{esc, body}]; ok {
		return key
	}
	key := esc
	if _, taken := c.rules[esc]; taken || c.pending[esc] && c.claim != esc {
		key = c.free(esc)
	}
	c.set(key, body, esc)
	return key
}

// free is the first name esc0, esc1, ... no rule has or reserves.
func (c *Converter) free(esc string) string {
	for i := c.next[esc]; ; i++ {
		key := esc + strconv.Itoa(i)
		if _, taken := c.rules[key]; !taken && !c.pending[key] {
			c.next[esc] = i + 1
			return key
		}
	}
}

// set stores a rule of family fam, checking MaxRules and MaxGrammarBytes.
func (c *Converter) set(key, body, fam string) {
	if old, ok := c.rules[key]; ok {
		c.size -= len(key) + len(old) + 6
		delete(c.same, [2]string{c.family[key], old})
	}
	delete(c.pending, key)
	c.rules[key], c.family[key] = body, fam
	c.same[[2]string{fam, body}] = key
	c.size += len(key) + len(body) + 6
	if c.err == nil && len(c.rules) > MaxRules {
		c.err = &Error{Msg: fmt.Sprintf("the grammar needs more than MaxRules (%d) rules", MaxRules), Err: ErrLimit}
	}
	if c.err == nil && c.size > MaxGrammarBytes {
		c.err = &Error{Msg: fmt.Sprintf("the grammar is larger than MaxGrammarBytes (%d)", MaxGrammarBytes), Err: ErrLimit}
	}
}

// reserve takes a free name for a rule whose body is not known yet.
func (c *Converter) reserve(name string) string {
	esc := sanitizeRuleName(name)
	key := esc
	if _, taken := c.rules[esc]; taken || c.pending[esc] {
		key = c.free(esc)
	}
	c.pending[key] = true
	c.family[key] = esc
	return key
}

// addPrimitive is llama.cpp's _add_primitive: a built-in rule under name,
// and the built-in rules it uses under their own names.
func (c *Converter) addPrimitive(name string, b builtin) string {
	n := c.addRule(name, b.body)
	for _, dep := range b.deps {
		if _, ok := c.rules[dep]; ok {
			continue
		}
		d, ok := primitives[dep]
		if !ok {
			d = formats[dep]
		}
		c.addPrimitive(dep, d)
	}
	return n
}

// formatLiteral is a GBNF string literal matching s exactly.
func formatLiteral(s string) string {
	r := strings.NewReplacer("\r", `\r`, "\n", `\n`, `"`, `\"`, `\`, `\\`)
	return `"` + r.Replace(s) + `"`
}
