package jsonschema

import (
	"flag"
	"regexp"
	"strings"
	"testing"
	"time"
)

// FuzzToGBNF converts arbitrary bytes: it must return a grammar or an
// *Error, never panic, and every rule a grammar refers to must be defined;
// while fuzzing, an input taking over two seconds is a finding too (not when
// the seeds run as tests, where the machine's load would decide). The seed
// corpus (testdata/fuzz/FuzzToGBNF) holds schemas of every construct.
func FuzzToGBNF(f *testing.F) {
	fuzzing := flag.Lookup("test.fuzz") != nil && flag.Lookup("test.fuzz").Value.String() != ""
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"integer","minimum":3}},"additionalProperties":{"type":"string"}}`))
	f.Fuzz(func(t *testing.T, schema []byte) {
		start := time.Now()
		g, err := ToGBNF(schema)
		if d := time.Since(start); fuzzing && d > 2*time.Second {
			t.Fatalf("took %v", d)
		}
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("%T %v: want an *Error", err, err)
			}
			return
		}
		if err := checkRefs(g); err != "" {
			t.Fatalf("%s in\n%s", err, g)
		}
	})
}

var ruleLine = regexp.MustCompile(`^([a-zA-Z0-9-]+) ::= (.*)$`)

// checkRefs reports a rule a grammar refers to without defining it, or a
// grammar without root ("" when there is none).
func checkRefs(g string) string {
	defined := map[string]bool{}
	var bodies []string
	for _, line := range strings.Split(strings.TrimSuffix(g, "\n"), "\n") {
		m := ruleLine.FindStringSubmatch(line)
		if m == nil {
			return "bad line " + line
		}
		defined[m[1]] = true
		bodies = append(bodies, m[2])
	}
	if !defined["root"] {
		return "no root rule"
	}
	for _, body := range bodies {
		for _, name := range identifiers(body) {
			if !defined[name] {
				return "undefined rule " + name
			}
		}
	}
	return ""
}

// identifiers are the rule names a GBNF body refers to: its words outside
// literals, classes and repetition counts.
func identifiers(body string) []string {
	var names []string
	for i := 0; i < len(body); {
		switch c := body[i]; {
		case c == '"' || c == '[':
			end := byte('"')
			if c == '[' {
				end = ']'
			}
			i++
			for i < len(body) && body[i] != end {
				if body[i] == '\\' {
					i++
				}
				i++
			}
			i++
		case c == '{':
			for i < len(body) && body[i] != '}' {
				i++
			}
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-':
			j := i
			for j < len(body) && (body[j] >= 'a' && body[j] <= 'z' || body[j] >= 'A' && body[j] <= 'Z' || body[j] >= '0' && body[j] <= '9' || body[j] == '-') {
				j++
			}
			names = append(names, body[i:j])
			i = j
		default:
			i++
		}
	}
	return names
}
