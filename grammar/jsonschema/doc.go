// Package jsonschema converts JSON Schemas to grammars in llama.cpp's GBNF,
// for grammar-constrained sampling: a model sampled under the grammar of a
// schema writes JSON that parses and that the schema accepts.
//
// It follows llama.cpp's converter (common/json-schema-to-grammar.cpp, and
// examples/json_schema_to_grammar.py, the same algorithm): the same rules,
// rule names, property order and whitespace, so that its grammars are
// llama.cpp's wherever llama.cpp's are right. Where llama.cpp's would
// accept a text the schema rejects, or silently ignore a keyword, this
// converter either does better or fails with an *Error naming the keyword
// and its JSON pointer:
//
//	jsonschema: /properties/a: "not" is not supported
//
// A grammar may be stricter than its schema (it then still generates only
// valid texts); it is never looser.
//
// # What a grammar allows, as llama.cpp's
//
//   - Whitespace: only llama.cpp's "space" rule, after "{", "[", ",",
//     ":" and a key, and before "}" and "]": nothing, one space, or one
//     or two newlines followed by up to 20 spaces or tabs. None before a
//     comma, none around the whole text.
//   - Objects: the listed properties only (additionalProperties absent
//     means none other), required ones first, each group in the schema's
//     order; any optional ones may be left out. Additional properties, when
//     allowed, come last.
//   - Numbers: at most 16 integral and 16 decimal digits, no leading zeros
//     in an exponent; integers without a fraction ("1.0" is refused).
//   - Strings: no raw DEL; an escape counts as one character of minLength
//     and maxLength (a surrogate pair's two escapes as two).
//   - const and enum values: exactly their compact JSON text, keys in the
//     schema's order, numbers as written in the schema.
//   - formats: "date" (a real day: 02-29 only in leap years, unlike
//     llama.cpp's), "time" and "date-time" (seconds with 3 decimals or
//     none, a "Z" or "+hh:mm" offset, an upper-case "T"), "uuid" (and
//     llama.cpp's uuid1 to uuid5, versions unchecked).
//   - "prefixItems" (or an "items" array): every item of the tuple.
//
// # Supported keywords
//
// type (a name or an array of names), properties, required,
// additionalProperties (false, true or a schema), items, prefixItems,
// additionalItems, minItems, maxItems, enum, const, anyOf, oneOf (when no
// two alternatives can match one value: different types, different
// literals, or objects differing in a required literal property), allOf
// (of object schemas, whose properties and required lists merge; or of
// enums, which intersect; or a single schema), $ref ("#", "#/$defs/...",
// "#/definitions/...", any "#/..." pointer; nested and recursive), minLength,
// maxLength, pattern, format, and minimum, maximum, exclusiveMinimum,
// exclusiveMaximum for integers (any bounds) and numbers (integer bounds;
// the number is then written without an exponent).
//
// A keyword about another type than the schema's passes (minLength beside
// "type": "integer"); a string, number, array or object keyword without a
// "type" makes the schema that type, as llama.cpp does for pattern.
//
// Ignored, because they do not restrict: title, description, default,
// examples, example, deprecated, readOnly, writeOnly, $schema, $id,
// $comment, $anchor, $dynamicAnchor, $vocabulary, $defs and definitions
// (except through $ref), contentEncoding, contentMediaType,
// contentSchema, and any keyword JSON Schema does not define (as
// validators ignore them). uniqueItems false and zero minimums restrict
// nothing and pass too.
//
// Not supported (errors): not, if/then/else, patternProperties,
// propertyNames, dependentRequired, dependentSchemas, dependencies,
// minProperties, maxProperties, uniqueItems, contains, multipleOf,
// unevaluatedProperties, unevaluatedItems, $dynamicRef, $recursiveRef, a
// $ref outside the schema, formats other than those above, fractional
// bounds of a number, a keyword beside $ref, anyOf or oneOf, and the
// combinations one branch of the conversion cannot express (pattern with
// minLength, format with pattern, ...).
//
// # Patterns
//
// A pattern is an ECMAScript regular expression (the dialect of JSON
// Schema, which ajv compiles with the u flag), parsed here: literals, ".",
// classes with ranges and negation, \d \w \s and their negations,
// \t \n \r \f \v \0 \xHH \uHHHH and escaped syntax characters, groups
// (capturing, (?:...) and named), alternation, and the quantifiers * + ?
// {n} {n,} {n,m} (lazy or not). Each character class becomes the JSON
// encodings of its characters: raw where JSON allows, escaped (\" \\ \n
// \u00XX) where it must. A pattern without ^ (or $) matches anywhere: the
// grammar allows any characters before (after) it. Lookaround,
// backreferences, \b, \p{...} and anchors inside the pattern are errors.
// An escaped surrogate pair (\uD83D\uDE00) is the character it encodes, a
// class of high surrogates before one of low surrogates the characters
// their pairs encode; any other surrogate escape is an error, as UTF-8
// text holds no surrogates. A group that matches the empty string repeated
// without bound ((a?)+) is an error too: as a grammar it would be a rule
// reaching itself before reading a character.
// llama.cpp copies a pattern's text instead: it needs both anchors, refuses
// \d, and its "." can end the JSON string early.
//
// # Where it differs from llama.cpp
//
// Besides the patterns, the dates and the errors above: number bounds
// (llama.cpp ignores them); one-sided integer bounds (llama.cpp's grammar
// for "minimum": 1000 accepts 10); additional property keys that are a
// prefix of a property name (llama.cpp refuses "c" beside "currency") or
// start with a backslash (llama.cpp's grammar can end such a key with a
// lone backslash); allOf (llama.cpp requires every property of a component
// and makes those of an anyOf inside it optional); a tuple with further
// items (llama.cpp ignores prefixItems beside items); {} accepts any value
// (llama.cpp's gives any object, but the grammar for {"description": "x"}
// accepts any value); a $ref inside a schema that is a $ref (llama.cpp does
// not resolve it); const and enum texts are compact like llama.cpp's C++
// converter's (its Python one writes ", " and ": "). JSONObject is the
// grammar of OpenAI's json_object response format.
//
// # Limits
//
// MaxSchemaBytes, MaxDepth, MaxRules, MaxGrammarBytes and MaxRepeat bound
// what a schema may ask for, so that a hostile one takes bounded memory
// and time; MaxMinRepeat and MaxMaxRepeat bound a repetition's minimum and
// maximum as llama.cpp's grammar parser does (a larger maximum is refused,
// never dropped). The error then names the limit (ErrLimit).
package jsonschema
