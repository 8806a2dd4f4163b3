package models_test

import (
	"bytes"
	"compress/gzip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/models"
)

// The READMEs state the default model's size: "601 KB", "0.6 MB",
// "601,248 bytes", "≈ 0.52 MB gzipped" (README.md, web/README.md,
// httpapi/README.md). A new default model must change them with this test.
// (engine/gguf's TestReferenceFiles checks the bytes are the reference's.)
func TestDefaultModelSizeIsWhatTheREADMEsSay(t *testing.T) {
	m := models.Default()
	assert.Equal(t, 601_248, len(m))

	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, err := w.Write(m)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	assert.InDelta(t, 520_000, gz.Len(), 5_000, "≈ 0.52 MB gzipped")
}
