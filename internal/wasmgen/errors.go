package wasmgen

import "errors"

// Sentinel errors; functions wrap them with %w and add detail.
var (
	// ErrStructure is returned by Module.Bytes for a body whose blocks,
	// loops and ifs are not all closed, or a branch to a label that does not
	// enclose it.
	ErrStructure = errors.New("wasmgen: unbalanced structure")
	// ErrDuplicate is returned by Module.Bytes when two exports share a name.
	ErrDuplicate = errors.New("wasmgen: duplicate export")
)
