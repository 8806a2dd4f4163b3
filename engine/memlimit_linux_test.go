package engine

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// TestHostMemoryIsTheMachines: on Linux the bound of a context beyond the
// trained one is the machine's memory as /proc/meminfo's MemTotal says it,
// or the process's address-space limit when that is less; a session whose
// estimate exceeds it by one position's KV cache is refused
// naming both, before anything is allocated.
func TestHostMemoryIsTheMachines(t *testing.T) {
	f, err := os.Open("/proc/meminfo")
	require.NoError(t, err)
	defer f.Close()
	var total int64
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(t, err)
			total = kib << 10
		}
	}
	require.Positive(t, total)
	limit, what := hostMemory()
	var rl syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_AS, &rl))
	if uint64(rl.Cur) < uint64(total) {
		assert.Equal(t, int64(rl.Cur), limit)
		assert.Contains(t, what, "(ulimit -v)")
	} else {
		assert.Equal(t, min(total, fallbackMemory), limit)
		assert.Contains(t, what, "this machine's ")
	}

	wide, err := modelgen.Build(modelgen.Spec{Arch: "llama", Type: tensor.F32, Seed: 3,
		Shape: modelgen.Shape{Dim: 64, HiddenDim: 128, Layers: 2, Heads: 4, KVHeads: 4, HeadDim: 2048, VocabSize: 300, ContextLength: 128}})
	require.NoError(t, err)
	m, err := LoadGGUF(wide) // 128 KiB of KV cache a position
	require.NoError(t, err)
	kv := KVF32
	perPosition := m.Config().KVCacheBytes(1, kv)
	positions := int(limit/perPosition) + 1 // its KV cache alone exceeds the limit
	if positions > MaxContextLength {
		t.Skipf("the model's KV cache at MaxContextLength (%d positions) fits in %d MiB", MaxContextLength, limit>>20)
	}
	err = m.CheckContextMemory(positions, kv)
	require.ErrorIs(t, err, ErrInvalidOption)
	assert.Contains(t, err.Error(), "more than "+what)
	assert.NoError(t, m.CheckContextMemory(2048, kv))
}
