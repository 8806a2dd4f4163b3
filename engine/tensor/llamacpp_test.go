package tensor

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Checks against files made by llama.cpp's own tools (see the shared models
// folder's README, shared/models/README.md): the same model as F32 and
// quantized by llama-quantize. `go test -run TestLlamaCpp -update -models
// DIR`, with DIR that folder, extracts a few rows of a few tensors of every
// file into testdata/ggml/ (the synth-k256 files are MBs and not in the
// repository); the tests then read only testdata. TestLlamaCppWholeFiles
// checks every row of the whole files the repository holds (stories260K, in
// ../testdata/gguf/), and with -models those of DIR too.

var (
	update      = flag.Bool("update", false, "regenerate testdata/ggml from the GGUF files in -models")
	modelsDir   = flag.String("models", "", "the shared models folder (shared/models/README.md): the GGUF files -update extracts rows from, and which TestLlamaCppWholeFiles checks whole")
	extractOnce sync.Once
)

// repoModels is where the repository holds reference GGUF files: package
// engine's test data (stories260K in every type; of synth-k256 only Q4_K_M
// and Q6_K, without the F32 file the checks compare with).
const repoModels = "../testdata/gguf"

// llamaCppSets name, per model, the F32 file, the quantized files and the
// rows to keep: a few rows of tensors that cover every type in the files
// (synth-k256: Q4_K_M keeps attn_v/ffn_down of layer 1 and output as Q6_K,
// Q4_0 keeps output as Q6_K; stories260K: ffn_down stays F16 and output
// becomes Q8_0).
var llamaCppSets = []struct {
	model string
	files []string
	rows  map[string][]int
}{
	{
		model: "synth-k256",
		files: []string{"F16", "Q8_0", "Q6_K", "Q4_0", "Q4_K_M"},
		rows: map[string][]int{
			"blk.0.attn_q.weight":   {0, 1, 2, 100, 254, 255},
			"blk.1.attn_v.weight":   {0, 127},
			"blk.1.ffn_down.weight": {0, 255},
			"output.weight":         {0, 511},
			"token_embd.weight":     {3, 400},
		},
	},
	{
		model: "stories260K",
		files: []string{"F16", "Q8_0", "Q5_1", "Q5_0", "Q4_1", "Q4_0"},
		rows: map[string][]int{
			"blk.0.attn_q.weight":   {0, 1, 63},
			"blk.4.ffn_gate.weight": {0, 171},
			"blk.2.ffn_down.weight": {5, 60},
			"output.weight":         {0, 511},
		},
	},
}

// A testdata file holds records of rows of one tensor:
// u16 name length, name, u32 type, u32 cols, u32 row count, then per row a
// u32 row index and the row's bytes.
type rowRecord struct {
	name       string
	typ        Type
	cols       int
	rows       []int
	data       [][]byte
	sourceFile string
}

func writeRecords(path string, recs []rowRecord) error {
	var b bytes.Buffer
	le := binary.LittleEndian
	for _, r := range recs {
		b.Write(le.AppendUint16(nil, uint16(len(r.name))))
		b.WriteString(r.name)
		for _, v := range []int{int(r.typ), r.cols, len(r.rows)} {
			b.Write(le.AppendUint32(nil, uint32(v)))
		}
		for i, row := range r.rows {
			b.Write(le.AppendUint32(nil, uint32(row)))
			b.Write(r.data[i])
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

func readRecords(path string) ([]rowRecord, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := &ggufReader{b: b}
	var recs []rowRecord
	for r.off < len(b) && r.err == nil {
		var rec rowRecord
		rec.name = string(r.next(int(binary.LittleEndian.Uint16(r.next(2)))))
		rec.typ, rec.cols = Type(r.u32()), int(r.u32())
		n := int(r.u32())
		rb, err := RowBytes(rec.typ, rec.cols)
		if err != nil {
			return nil, err
		}
		for range n {
			rec.rows = append(rec.rows, int(r.u32()))
			rec.data = append(rec.data, r.next(rb))
		}
		rec.sourceFile = filepath.Base(path)
		recs = append(recs, rec)
	}
	if r.err != nil {
		return nil, fmt.Errorf("%s: %w", path, r.err)
	}
	return recs, nil
}

func testdataPath(model, file string) string {
	return filepath.Join("testdata", "ggml", model+"-"+file+".rows")
}

// extractRows copies the selected rows of a GGUF file into testdata.
func extractRows(dir, model, file string, rows map[string][]int) error {
	b, err := os.ReadFile(filepath.Join(dir, model+"-"+file+".gguf"))
	if err != nil {
		return err
	}
	ts, err := parseGGUF(b)
	if err != nil {
		return err
	}
	var recs []rowRecord
	names := make([]string, 0, len(rows))
	for n := range rows {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		t, ok := ts[name]
		if !ok {
			return fmt.Errorf("%s: no tensor %s", file, name)
		}
		rb, err := RowBytes(t.typ, int(t.dims[0]))
		if err != nil {
			return fmt.Errorf("%s: %s: %w", file, name, err)
		}
		rec := rowRecord{name: name, typ: t.typ, cols: int(t.dims[0])}
		for _, r := range rows[name] {
			if (r+1)*rb > len(t.data) {
				return errors.New("row out of range")
			}
			rec.rows = append(rec.rows, r)
			rec.data = append(rec.data, t.data[r*rb:(r+1)*rb])
		}
		recs = append(recs, rec)
	}
	return writeRecords(testdataPath(model, file), recs)
}

// llamaCppPairs loads, for every quantized row in testdata, the same row of
// the F32 file.
func llamaCppPairs(t *testing.T) (quant []rowRecord, f32 map[string][]float32) {
	if *update {
		require.NotEmpty(t, *modelsDir, "-update reads the reference GGUF files: give their folder (shared/models) with -models DIR")
		extractOnce.Do(func() {
			for _, set := range llamaCppSets {
				for _, f := range append([]string{"F32"}, set.files...) {
					require.NoError(t, extractRows(*modelsDir, set.model, f, set.rows), "%s-%s", set.model, f)
				}
			}
		})
	}
	f32 = map[string][]float32{}
	for _, set := range llamaCppSets {
		ref, err := readRecords(testdataPath(set.model, "F32"))
		require.NoError(t, err)
		for _, rec := range ref {
			require.Equal(t, F32, rec.typ)
			for i, r := range rec.rows {
				f32[fmt.Sprintf("%s/%s/%d", set.model, rec.name, r)] = slices.Clone(Float32s(alignedCopy(rec.data[i])))
			}
		}
		for _, f := range set.files {
			recs, err := readRecords(testdataPath(set.model, f))
			require.NoError(t, err)
			for i := range recs {
				recs[i].name = set.model + "/" + recs[i].name
			}
			quant = append(quant, recs...)
		}
	}
	return quant, f32
}

func alignedCopy(b []byte) []byte {
	a := alignedBytes(len(b))
	copy(a, b)
	return a
}

// TestLlamaCppQuantizeBytes: our quantizers, given the F32 rows, write the
// very bytes llama-quantize wrote (it uses ggml's reference quantizers when
// no importance matrix is given). This proves both the block layouts and
// the ports of quantize_row_*_ref for F16, Q8_0, Q5_1, Q5_0, Q4_1, Q4_0,
// Q4_K and Q6_K.
func TestLlamaCppQuantizeBytes(t *testing.T) {
	quant, f32 := llamaCppPairs(t)
	seen := map[Type]int{}
	for _, rec := range quant {
		for i, r := range rec.rows {
			src := f32[fmt.Sprintf("%s/%d", rec.name, r)]
			require.Len(t, src, rec.cols, "%s row %d", rec.name, r)
			checkQuantizeBytes(t, rec.typ, src, rec.data[i], fmt.Sprintf("%s %s row %d", rec.sourceFile, rec.name, r))
			seen[rec.typ]++
		}
	}
	for _, typ := range []Type{F16, Q8_0, Q5_1, Q5_0, Q4_1, Q4_0, Q4_K, Q6_K} {
		assert.Positive(t, seen[typ], "no %v rows in testdata", typ)
	}
}

// TestLlamaCppDequantize: our dequantization of llama-quantize's bytes is
// within the precision of the type of the original F32 values (see
// checkDequantize for the bound per type), and K-quant quants are the
// nearest points of the grids our decoding reads (checkNearestGrid).
func TestLlamaCppDequantize(t *testing.T) {
	quant, f32 := llamaCppPairs(t)
	for _, rec := range quant {
		for i, r := range rec.rows {
			src, what := f32[fmt.Sprintf("%s/%d", rec.name, r)], fmt.Sprintf("%s %s row %d", rec.sourceFile, rec.name, r)
			checkDequantize(t, rec.typ, src, rec.data[i], 0, what)
			if layouts[rec.typ].blockSize == qkK {
				checkNearestGrid(t, rec.typ, src, rec.data[i], what)
			}
		}
	}
}

// TestLlamaCppWholeFiles runs both checks on every row of every non-F32
// tensor of the full GGUF files: those in the repository, and with -models
// those of the shared models folder.
func TestLlamaCppWholeFiles(t *testing.T) {
	checked := 0
	for _, set := range llamaCppSets {
		for _, dir := range []string{repoModels, *modelsDir} {
			if dir == "" {
				continue
			}
			if _, err := os.Stat(filepath.Join(dir, set.model+"-F32.gguf")); errors.Is(err, fs.ErrNotExist) && dir == repoModels {
				t.Logf("%s: no %s-F32.gguf in the repository; -models DIR checks its files whole", set.model, set.model)
				continue
			}
			t.Run(set.model+" in "+dir, func(t *testing.T) {
				checkWholeFiles(t, dir, set.model, set.files)
			})
			checked++
		}
	}
	require.Positive(t, checked)
}

// checkWholeFiles checks every row of the quantized files of model in dir
// against its F32 file there.
func checkWholeFiles(t *testing.T, dir, model string, files []string) {
	b, err := os.ReadFile(filepath.Join(dir, model+"-F32.gguf"))
	require.NoError(t, err)
	ref, err := parseGGUF(b)
	require.NoError(t, err)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, model+"-"+f+".gguf"))
		require.NoError(t, err)
		ts, err := parseGGUF(b)
		require.NoError(t, err)
		for name, q := range ts {
			if q.typ == F32 {
				continue
			}
			src := Float32s(alignedCopy(ref[name].data))
			cols := int(q.dims[0])
			rb, err := RowBytes(q.typ, cols)
			require.NoError(t, err, name)
			for r := range len(src) / cols {
				what := fmt.Sprintf("%s-%s %s row %d", model, f, name, r)
				checkQuantizeBytes(t, q.typ, src[r*cols:(r+1)*cols], q.data[r*rb:(r+1)*rb], what)
				checkDequantize(t, q.typ, src[r*cols:(r+1)*cols], q.data[r*rb:(r+1)*rb], 0, what)
				if layouts[q.typ].blockSize == qkK {
					checkNearestGrid(t, q.typ, src[r*cols:(r+1)*cols], q.data[r*rb:(r+1)*rb], what)
				}
			}
		}
	}
}

func checkQuantizeBytes(t *testing.T, typ Type, src []float32, want []byte, what string) {
	got := make([]byte, len(want))
	require.NoError(t, Quantize(typ, got, src), what)
	require.Equal(t, want, got, "%s (%v)", what, typ)
}

// checkDequantize requires each decoded element within one quantization
// step of its ggml block (32 elements, or 256 for K-quants) times (1 + 2⁻⁷):
//   - symmetric types (Q8_0, Q4_0, Q5_0, Q3_K, Q6_K): step =
//     max|x|/2^(bits-1). Rounding to the nearest level errs by half a step;
//     Q4_0/Q5_0 map the largest magnitude to -2^(bits-1) and clip the
//     opposite end to 2^(bits-1)-1, a full step.
//   - asymmetric types (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K): step =
//     (max - min)/(2^bits - 1), with min ≤ 0 for the K-quants (ggml clamps
//     it). Half a step of rounding, plus |min|·2⁻¹⁰ for the fp16 rounding of
//     the stored min.
//
// The (1 + 2⁻⁷) covers the fp16 rounding of block scales (relative 2⁻¹¹,
// times at most 2^(bits-1) levels: 7·2⁻¹¹ of a step in the Q4_0 clip case).
// For Q8_0, Q4_0, Q5_0, Q4_1 and Q5_1, whose scales are closed-form, this
// is a proof. The K-quants choose scales by a weighted least-squares search
// and quantize them again (6 bits; Q2_K 4 bits, Q6_K 8 bits), which can
// clip an outlier: there the bound is what llama.cpp's own files and
// Gaussian rows meet (measured worst: Q4_K 0.73 step, Q6_K 0.52), not a
// guarantee for every input (see checkNearestGrid for what is guaranteed).
// F16 must be within half an F16 ulp: |x|·2⁻¹¹ (+2⁻²⁵ for subnormals),
// BF16 within |x|·2⁻⁸. Blocks whose largest magnitude is below minAmax are
// not checked (the fuzz targets skip blocks whose fp16 scales would be
// subnormal, where the bound does not hold for ggml either).
func checkDequantize(t *testing.T, typ Type, src []float32, data []byte, minAmax float64, what string) {
	bits := map[Type]int{Q8_0: 8, Q6_K: 6, Q5_0: 5, Q5_1: 5, Q5_K: 5, Q4_0: 4, Q4_1: 4, Q4_K: 4, Q3_K: 3, Q2_K: 2}
	got := make([]float32, len(src))
	traitsTable[typ].dequantize(got, alignedCopy(data))
	if typ == F16 || typ == BF16 {
		ulp := map[Type]float64{F16: 0x1p-11, BF16: 0x1p-8}[typ]
		for j, v := range src {
			if tol := math.Abs(float64(v))*ulp + 0x1p-25; math.Abs(float64(v-got[j])) > tol {
				require.InDelta(t, v, got[j], tol, "%s element %d", what, j)
			}
		}
		return
	}
	b, ok := bits[typ]
	require.True(t, ok || typ == MXFP4, "no bound for %v", typ)
	bs := layouts[typ].blockSize
	for start := 0; start < len(src); start += bs {
		x := src[start : start+bs]
		if float64(max(slices.Max(x), -slices.Min(x))) < minAmax {
			continue
		}
		var step, minTerm float64
		switch typ {
		case Q4_1, Q5_1:
			step = float64(slices.Max(x)-slices.Min(x)) / float64(int(1)<<b-1)
			minTerm = math.Abs(float64(slices.Min(x))) * 0x1p-10
		case Q2_K, Q4_K, Q5_K:
			step = float64(slices.Max(x)-min(slices.Min(x), 0)) / float64(int(1)<<b-1)
			minTerm = math.Abs(float64(min(slices.Min(x), 0))) * 0x1p-10
		case MXFP4:
			// E2M1 under 2^(floor(log2 max|x|) - 2): the largest gap
			// between its values (4, 6) is 2 units, and values above 6
			// units (up to 8) clip to 6, so errors stay within 2 units,
			// at most max|x|/2.
			step = float64(max(slices.Max(x), -slices.Min(x))) / 2
		default:
			amax := max(slices.Max(x), -slices.Min(x))
			step = float64(amax) / float64(int(1)<<(b-1))
		}
		for j, v := range x {
			if tol := step*(1+0x1p-7) + minTerm; math.Abs(float64(v-got[start+j])) > tol {
				require.InDelta(t, v, got[start+j], tol, "%s element %d (%v)", what, start+j, typ)
			}
		}
	}
}

// checkNearestGrid requires every stored quant of a K-quant row to be the
// nearest point of its sub-block's grid {step·q + offset : qlo ≤ q ≤ qhi} to
// the original value, which ggml's K-quant reference quantizers guarantee by
// their last pass (q = clamp(nearest_int((x - offset)/step)) with the stored,
// rounded scales), whatever scales their search chose. (The 32-element
// formats quantize with the unrounded scale, so it does not hold there;
// their closed-form bound in checkDequantize does.) The slack covers the
// float32 rounding of that division (ties may go either way).
func checkNearestGrid(t *testing.T, typ Type, src []float32, data []byte, what string) {
	for i, v := range src {
		step, offset, q, qlo, qhi := naiveGrid(typ, data, i)
		x := float64(v)
		if step == 0 {
			continue // ggml leaves a zero-scale sub-block's quants as its search left them
		}
		err := math.Abs(x - (step*float64(q) + offset))
		slack := 0x1p-20 * (math.Abs(x) + math.Abs(offset) + math.Abs(step)*float64(max(-qlo, qhi)))
		for _, n := range []int{q - 1, q + 1} {
			if n >= qlo && n <= qhi {
				require.LessOrEqual(t, err, math.Abs(x-(step*float64(n)+offset))+slack,
					"%s element %d: quant %d, but %d is nearer (%v)", what, i, q, n, typ)
			}
		}
	}
}
