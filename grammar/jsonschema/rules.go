package jsonschema

// Bounds on what one schema may ask for. Each keeps a hostile schema from
// taking unbounded memory or time; an error past one names it (ErrLimit).
const (
	// MaxSchemaBytes bounds the schema's JSON text.
	MaxSchemaBytes = 1 << 20
	// MaxDepth bounds the nesting of the schema's JSON and of the
	// subschemas the conversion visits, "$ref"s followed included.
	MaxDepth = 64
	// MaxRules bounds the rules of a Converter's grammar.
	MaxRules = 10000
	// MaxGrammarBytes bounds the text of a Converter's grammar.
	MaxGrammarBytes = 4 << 20
	// MaxRepeat bounds every repetition count read from a schema:
	// minItems, maxItems, minLength, maxLength and a pattern's {n,m}.
	// (llama.cpp's grammar parser writes a repetition out as that many
	// copies of its item.)
	MaxRepeat = 10000
	// MaxMinRepeat bounds the minimum of a repetition (minItems,
	// minLength, a pattern's {n,m}): llama.cpp's grammar parser, and
	// package grammar's, refuse a larger one (MAX_REPETITION_THRESHOLD).
	MaxMinRepeat = 2000
	// MaxMaxRepeat bounds the maximum of a repetition (maxItems,
	// maxLength, a pattern's {n,m}), for the same reason: a schema with a
	// larger one is refused, never held to a grammar without its maximum.
	MaxMaxRepeat = 2000
	// maxPatternBytes bounds a pattern's text.
	maxPatternBytes = 4096
)

// spaceRule is llama.cpp's whitespace between tokens: nothing, one space,
// or one or two newlines followed by up to 20 spaces or tabs. It bounds the
// whitespace a model can emit so that it cannot "run away" in blank lines.
const spaceRule = `| " " | "\n"{1,2} [ \t]{0,20}`

// builtin is a rule of llama.cpp's converter with the rules it uses.
type builtin struct {
	body string
	deps []string
}

// primitives are llama.cpp's rules for JSON values (its PRIMITIVE_RULES):
// numbers have at most 16 integral and 16 decimal digits, strings no raw
// control characters and no DEL.
var primitives = map[string]builtin{
	"boolean":       {`("true" | "false")`, nil},
	"decimal-part":  {`[0-9]{1,16}`, nil},
	"integral-part": {`[0] | [1-9] [0-9]{0,15}`, nil},
	"number":        {`("-"? integral-part) ("." decimal-part)? ([eE] [-+]? integral-part)?`, []string{"integral-part", "decimal-part"}},
	"integer":       {`("-"? integral-part)`, []string{"integral-part"}},
	"value":         {`object | array | string | number | boolean | null`, []string{"object", "array", "string", "number", "boolean", "null"}},
	"object":        {`"{" space ( string ":" space value ("," space string ":" space value)* )? space "}"`, []string{"string", "value"}},
	"array":         {`"[" space ( value ("," space value)* )? space "]"`, []string{"value"}},
	"uuid":          {`"\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\""`, nil},
	"char":          {`[^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})`, nil},
	"string":        {`"\"" char* "\""`, []string{"char"}},
	"null":          {`"null"`, nil},
}

// formats are the string formats (llama.cpp's STRING_FORMAT_RULES). time
// and date-time are llama.cpp's; date is stricter than llama.cpp's, which
// takes any day 01-31 in any month: here a month has its own number of
// days and 02-29 needs a leap year, as RFC 3339 (and ajv-formats) say.
var formats = map[string]builtin{
	"date":             {`[0-9]{4} "-" ( ( "0" [13578] | "1" [02] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ) | ( "0" [469] | "11" ) "-" ( "0" [1-9] | [12] [0-9] | "30" ) | "02-" ( "0" [1-9] | "1" [0-9] | "2" [0-8] ) ) | ( [0-9] [0-9] ( [02468] [48] | [13579] [26] | [2468] "0" ) | ( [02468] [048] | [13579] [26] ) "00" ) "-02-29"`, nil},
	"time":             {`([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{3} )? ( "Z" | ( "+" | "-" ) ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] )`, nil},
	"date-time":        {`date "T" time`, []string{"date", "time"}},
	"date-string":      {`"\"" date "\""`, []string{"date"}},
	"time-string":      {`"\"" time "\""`, []string{"time"}},
	"date-time-string": {`"\"" date-time "\""`, []string{"date-time"}},
}

// reserved are the names a schema's rules never take (llama.cpp appends
// "-" to them).
func reserved(name string) bool {
	_, p := primitives[name]
	_, f := formats[name]
	return name == "root" || p || f
}

// Keywords, by what they do. annotations never restrict a value; the
// others restrict values of the types listed (nil: of every type).
var (
	annotations = map[string]bool{
		"$schema": true, "$id": true, "$comment": true, "$defs": true, "definitions": true,
		"$anchor": true, "$dynamicAnchor": true, "$vocabulary": true,
		"title": true, "description": true, "default": true, "examples": true, "example": true,
		"deprecated": true, "readOnly": true, "writeOnly": true,
		"contentEncoding": true, "contentMediaType": true, "contentSchema": true,
	}
	keywordTypes = map[string][]string{
		"type": nil, "enum": nil, "const": nil, "allOf": nil, "anyOf": nil, "oneOf": nil,
		"not": nil, "if": nil, "then": nil, "else": nil, "$ref": nil, "$dynamicRef": nil, "$recursiveRef": nil,
		"$recursiveAnchor": nil,

		"minLength": {"string"}, "maxLength": {"string"}, "pattern": {"string"}, "format": {"string"},

		"minimum": {"number", "integer"}, "maximum": {"number", "integer"},
		"exclusiveMinimum": {"number", "integer"}, "exclusiveMaximum": {"number", "integer"},
		"multipleOf": {"number", "integer"},

		"properties": {"object"}, "required": {"object"}, "additionalProperties": {"object"},
		"patternProperties": {"object"}, "propertyNames": {"object"}, "minProperties": {"object"},
		"maxProperties": {"object"}, "dependentRequired": {"object"}, "dependentSchemas": {"object"},
		"dependencies": {"object"}, "unevaluatedProperties": {"object"},

		"items": {"array"}, "prefixItems": {"array"}, "additionalItems": {"array"},
		"minItems": {"array"}, "maxItems": {"array"}, "uniqueItems": {"array"},
		"contains": {"array"}, "minContains": {"array"}, "maxContains": {"array"},
		"unevaluatedItems": {"array"},
	}
)
