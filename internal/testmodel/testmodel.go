// Package testmodel holds the models the tests of several packages share:
// llama2.c's stories260K checkpoint and its tokenizer (embedded, so that a
// test needs no file system: the browser build's tests use them too),
// random-weight GGUF files written from modelgen's specs, and the cosine
// similarity the embedding tests compare vectors with. llama2.c run.c's
// outputs for stories260K are internal/golden's. Only tests import it.
package testmodel

import (
	_ "embed"
	"math"
	"slices"
	"testing"

	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// stories260K.bin is llama2.c's TinyStories 260K checkpoint (dim 64, 5
// layers, 8 heads, 4 kv heads, a shared classifier) and tok512.bin its
// 512-token tokenizer: the model the default one (models.Default, a GGUF
// file in F16) was converted from. engine/gguf/testdata/reference-models.md says where
// they come from; TestReferenceFiles checks their bytes.
var (
	//go:embed testdata/stories260K.bin
	stories260K []byte
	//go:embed testdata/tok512.bin
	tok512 []byte
)

// Stories260K returns copies of llama2.c's stories260K checkpoint and its
// tokenizer.bin, for engine.LoadLlama2C (a model may keep and rewrite the
// bytes it is given, so each caller gets its own).
func Stories260K() (checkpoint, tokenizer []byte) {
	return slices.Clone(stories260K), slices.Clone(tok512)
}

// GGUF writes sp as a GGUF file (modelgen.Build), failing t if it cannot.
func GGUF(t testing.TB, sp modelgen.Spec) []byte {
	t.Helper()
	data, err := modelgen.Build(sp)
	if err != nil {
		t.Fatalf("modelgen.Build: %v", err)
	}
	return data
}

// Cosine is the cosine similarity of a and b (of a's length), in float64:
// Σ a·b / √(Σ a² · Σ b²), each sum in order.
func Cosine[A, B float32 | float64](a []A, b []B) float64 {
	var ab, aa, bb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		ab += x * y
		aa += x * x
		bb += y * y
	}
	return ab / math.Sqrt(aa*bb)
}
