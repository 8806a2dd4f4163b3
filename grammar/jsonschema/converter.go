package jsonschema

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Converter gathers the rules of several schemas, and rules written by hand,
// into one grammar: a tool call's grammar holds every tool's parameters.
// Rule names never clash: like llama.cpp, a name already taken by another
// rule gets a number appended. The zero Converter is not usable: call
// NewConverter.
type Converter struct {
	rules map[string]string
	// pending are names reserved for "$ref" targets being converted,
	// which rules inside them may already refer to.
	pending map[string]bool
	size    int   // bytes of the rules' text, for MaxGrammarBytes
	err     error // the first limit hit, sticky for the current Add
}

// NewConverter returns a Converter holding llama.cpp's "space" rule.
func NewConverter() *Converter {
	return &Converter{rules: map[string]string{"space": spaceRule}, pending: map[string]bool{}}
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
	saved, savedSize := maps.Clone(c.rules), c.size
	defer func() {
		if err != nil {
			c.rules, c.size, c.err = saved, savedSize, nil
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
// another rule has it, then name0, name1, ... the first free or equal one.
func (c *Converter) addRule(name, body string) string {
	esc := sanitizeRuleName(name)
	key := esc
	if old, ok := c.rules[esc]; ok && old != body && !c.pending[esc] {
		for i := 0; ; i++ {
			key = fmt.Sprintf("%s%d", esc, i)
			if old, ok := c.rules[key]; !ok || old == body || c.pending[key] {
				break
			}
		}
	}
	c.set(key, body)
	return key
}

// set stores a rule, checking MaxRules and MaxGrammarBytes.
func (c *Converter) set(key, body string) {
	if old, ok := c.rules[key]; ok {
		c.size -= len(key) + len(old) + 6
	}
	delete(c.pending, key)
	c.rules[key] = body
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
	for i := 0; ; i++ {
		if _, ok := c.rules[key]; !ok && !c.pending[key] {
			break
		}
		key = fmt.Sprintf("%s%d", esc, i)
	}
	c.pending[key] = true
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
