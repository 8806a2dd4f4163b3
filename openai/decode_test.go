package openai

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDecodeNamesTheElement: a value of the wrong type inside an array is
// named by its path with the element's index ("messages[1].role"), not by
// the array's name as encoding/json's type error has it, wherever it is and
// whatever its kind.
func TestDecodeNamesTheElement(t *testing.T) {
	for _, tc := range []struct {
		body, param, message string
	}{
		{`{"messages": [{"role": "user"}, {"role": 5}]}`, "messages[1].role", "messages[1].role must be a string, got a number"},
		{`{"messages": [{"role": {"a": [1, 2]}}]}`, "messages[0].role", "messages[0].role must be a string, got an object"},
		{`{"messages": [{"role": ["user"]}]}`, "messages[0].role", "messages[0].role must be a string, got an array"},
		{`{"messages": ["hello"]}`, "messages[0]", "messages[0] must be an object, got a string"},
		{`{"messages": [{"role": "user", "content": "x"}, 7, {}]}`, "messages[1]", "messages[1] must be an object, got a number"},
		{`{"temperature": 1, "messages": [], "n": "two"}`, "n", "n must be an integer, got a string"},
		{`{"stream": "yes", "messages": [{"role": "user", "content": "x"}]}`, "stream", "stream must be a boolean, got a string"},
		{`{"messages": [{"role": "user", "content": "x"}], "stream_options": {"include_usage": [true]}}`, "stream_options.include_usage", "stream_options.include_usage must be a boolean, got an array"},
		{`{"stream_options": 5}`, "stream_options", "stream_options must be an object, got a number"},
		{`{"seed": 1.5}`, "seed", "seed must be an integer, got 1.5"},
	} {
		t.Run(tc.body, func(t *testing.T) {
			var req ChatRequest
			e := Decode([]byte(tc.body), &req)
			require.NotNil(t, e)
			assert.Equal(t, tc.param, e.Param)
			assert.Equal(t, tc.message, e.Message)
			assert.Equal(t, "invalid_type", e.Code)
		})
	}
}

// TestPathAt: the path of the value that ends where encoding/json reports
// a type error, or begins just before it.
func TestPathAt(t *testing.T) {
	body := `{"a": [1, {"b": [true, "x"]}], "c": {"d": null}}`
	for _, tc := range []struct {
		after       string // the body up to the offset
		path, named string
	}{
		{`{"a": [1`, "a[0]", "a"},
		{`{"a": [1, {`, "a[1]", "a"},
		{`{"a": [1, {"b": [true`, "a[1].b[0]", "a.b"},
		{`{"a": [1, {"b": [true, "x"`, "a[1].b[1]", "a.b"},
		{`{"a": [1, {"b": [true, "x"]`, "a[1].b", "a.b"},
		{`{"a": [1, {"b": [true, "x"]}`, "a[1]", "a"},
		{`{"a": [1, {"b": [true, "x"]}]`, "a", "a"},
		{`{"a": [1, {"b": [true, "x"]}], "c": {"d": null`, "c.d", "c.d"},
		{body, "", ""},
	} {
		require.Equal(t, tc.after, body[:len(tc.after)])
		path, named := pathAt([]byte(body), int64(len(tc.after)))
		assert.Equal(t, tc.path, path, tc.after)
		assert.Equal(t, tc.named, named, tc.after)
	}
	for _, bad := range []string{body[:len(body)-1], `"unterminated`, `]]`, `1, 2`, ``} {
		path, named := pathAt([]byte(bad), int64(len(body)+1))
		assert.Equal(t, [2]string{"", ""}, [2]string{path, named}, "%q: no value ends at the offset", bad)
	}
}

// FuzzPathAt: pathAt stops on any bytes, valid JSON or not, and the name
// it gives is its path less the indexes: never longer, and empty with it.
func FuzzPathAt(f *testing.F) {
	f.Add([]byte(`{"messages": [{"role": "user"}, {"role": 5}]}`), int64(40))
	f.Add([]byte(`[[[`), int64(2))
	f.Add([]byte(`{"a\"b": ["\`), int64(9))
	f.Fuzz(func(t *testing.T, body []byte, offset int64) {
		path, named := pathAt(body, offset)
		assert.LessOrEqual(t, len(named), len(path), "%q", body)
		if path == "" {
			assert.Empty(t, named, "%q", body)
		}
	})
}

// TestDecodeNamesEmbeddedFields: a value of the wrong type for any field a
// request type has from a struct it embeds (SamplingRequest's, and the
// shift fields SamplingRequest embeds) is named by its JSON name alone,
// never with the Go struct's name; every such field of every request type
// is tried, with a value of a kind it refuses.
func TestDecodeNamesEmbeddedFields(t *testing.T) {
	unmarshaler := reflect.TypeFor[json.Unmarshaler]()
	tried := map[string]bool{}
	for _, v := range []any{&ChatRequest{}, &CompletionRequest{}, &ResponsesRequest{}} {
		for _, f := range reflect.VisibleFields(reflect.TypeOf(v).Elem()) {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if len(f.Index) < 2 || name == "" || name == "-" || reflect.PointerTo(f.Type).Implements(unmarshaler) {
				continue // not from an embedded struct, or decoding itself
			}
			wrong := `"x"`
			if t := f.Type; t.Kind() == reflect.String || (t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.String) {
				wrong = `[1]`
			}
			body := `{"` + name + `": ` + wrong + `}`
			e := Decode([]byte(body), reflect.New(reflect.TypeOf(v).Elem()).Interface())
			if assert.NotNil(t, e, body) {
				assert.Equal(t, name, e.Param, body)
				assert.True(t, strings.HasPrefix(e.Message, name+" must be "), "%s: %s", body, e.Message)
			}
			tried[name] = true
		}
	}
	for _, name := range []string{"context_shift", "n_keep", "max_tokens", "temperature", "stream"} {
		assert.True(t, tried[name], "%s was tried", name)
	}
	for _, tc := range []struct{ body, param, message string }{
		{`{"context_shift": "yes"}`, "context_shift", "context_shift must be a boolean, got a string"},
		{`{"n_keep": "all"}`, "n_keep", "n_keep must be an integer, got a string"},
		{`{"n_keep": 1.5}`, "n_keep", "n_keep must be an integer, got 1.5"},
	} {
		e := Decode([]byte(tc.body), &ChatRequest{})
		require.NotNil(t, e, tc.body)
		assert.Equal(t, tc.param, e.Param)
		assert.Equal(t, tc.message, e.Message)
	}
}
