//go:build !js

package simdgen

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKernelSignatures checks each kernel's parameters against the Go
// declaration that calls it (engine/tensor's //go:wasmimport functions;
// TestExportsMatchGoImports checks that each import has its kernel) and
// against web/simd.js, which forwards a fixed number of arguments from
// Go to the kernel module and drops the rest: a parameter too many there
// would reach the kernel as 0. It also checks that engine/tensor's
// matrix–vector scratch is MatVecScratchBytes.
func TestKernelSignatures(t *testing.T) {
	root := repoRoot(t)
	src, goParams := goImports(t)

	js, err := os.ReadFile(filepath.Join(root, "web", "simd.js"))
	require.NoError(t, err)
	fwd := regexp.MustCompile(`imports\[name\] = \(([^)]*)\) => kernel\(`).FindSubmatch(js)
	require.NotNil(t, fwd, "web/simd.js's forwarding of a kernel's arguments")
	forwarded := strings.Count(string(fwd[1]), ",") + 1

	for name, build := range map[string]func() ([]byte, error){"plain": Module, "relaxed": RelaxedModule} {
		t.Run(name, func(t *testing.T) {
			b, err := build()
			require.NoError(t, err)
			params, err := exportParams(b)
			require.NoError(t, err)
			for kernel, n := range params {
				require.LessOrEqual(t, n, forwarded, "%s takes more parameters than web/simd.js forwards", kernel)
				if want, ok := goParams[kernel]; ok {
					require.Equal(t, want, n, "%s: parameters in engine/tensor's declaration and in the module", kernel)
				}
			}
		})
	}

	m := regexp.MustCompile(`const matVecScratchBytes = (\d+)`).FindSubmatch(src)
	require.NotNil(t, m, "engine/tensor's matVecScratchBytes")
	n, err := strconv.Atoi(string(m[1]))
	require.NoError(t, err)
	require.Equal(t, MatVecScratchBytes, n)
}

// goImports returns engine/tensor's simd_wasm.go and the kernels it
// imports (//go:wasmimport wasmlm_simd), each with how many parameters its
// declaration takes.
func goImports(t *testing.T) (src []byte, params map[string]int) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(repoRoot(t), "engine", "tensor", "simd_wasm.go"))
	require.NoError(t, err)
	params = map[string]int{}
	decl := regexp.MustCompile(`//go:wasmimport wasmlm_simd (\w+)\n(?://.*\n)*func \w+\(([^)]*)\)`)
	for _, m := range decl.FindAllSubmatch(src, -1) {
		params[string(m[1])] = 0
		if len(bytes.TrimSpace(m[2])) != 0 {
			params[string(m[1])] = bytes.Count(m[2], []byte(",")) + 1
		}
	}
	require.NotEmpty(t, params)
	return src, params
}

// exportParams reads a module's exported functions and how many
// parameters each takes; every parameter must be an i32 and no function
// may return a result.
func exportParams(b []byte) (map[string]int, error) {
	r := &wasmReader{b: b, i: 8}
	var types []int // parameters of each function type
	var funcs []int // type of each function, imported ones first
	out := map[string]int{}
	for r.i < len(r.b) {
		id := r.byte()
		size := r.u32()
		end := r.i + size
		switch id {
		case 1: // types
			for range r.u32() {
				if r.byte() != 0x60 {
					return nil, fmt.Errorf("a type that is not a function")
				}
				n := r.u32()
				for range n {
					if t := r.byte(); t != 0x7f {
						return nil, fmt.Errorf("a parameter of type %#x, not i32", t)
					}
				}
				if res := r.u32(); res != 0 {
					return nil, fmt.Errorf("a function type with %d results", res)
				}
				types = append(types, n)
			}
		case 2: // imports
			for range r.u32() {
				r.i += r.u32() // module
				r.i += r.u32() // name
				switch kind := r.byte(); kind {
				case 0:
					funcs = append(funcs, r.u32())
				case 2: // memory: flags, minimum, maximum if flagged
					if r.byte()&1 != 0 {
						r.u32()
					}
					r.u32()
				default:
					return nil, fmt.Errorf("an import of kind %d", kind)
				}
			}
		case 3: // functions
			for range r.u32() {
				funcs = append(funcs, r.u32())
			}
		case 7: // exports
			for range r.u32() {
				n := r.u32()
				name := string(r.b[r.i : r.i+n])
				r.i += n
				kind, index := r.byte(), r.u32()
				if kind == 0 {
					out[name] = types[funcs[index]]
				}
			}
		}
		r.i = end
	}
	return out, nil
}

// wasmReader reads a module's bytes from i.
type wasmReader struct {
	b []byte
	i int
}

func (r *wasmReader) byte() byte {
	r.i++
	return r.b[r.i-1]
}

// u32 reads an unsigned LEB128 number.
func (r *wasmReader) u32() int {
	var v, shift int
	for {
		c := r.byte()
		v |= int(c&0x7f) << shift
		if c < 0x80 {
			return v
		}
		shift += 7
	}
}
