package engine

import (
	"errors"

	"github.com/wasmlm/wasmlm/chat"
)

// Until grammar/jsonschema lands on main (this session): the two
// conversions FormatGrammar and ToolGrammar need.
var errSchemaPending = errors.New("JSON schemas are not available yet")

func schemaToGBNF([]byte) (string, error) { return "", errSchemaPending }

func toolCallGBNF(chat.ToolFormat, []chat.Tool, chat.ToolChoice, bool) (string, error) {
	return "", errSchemaPending
}
