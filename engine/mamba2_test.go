package engine

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/race"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// graniteHybridSpec is a small Granite 4 hybrid: 6 layers, Mamba-2 but
// for layers 2 and 5, which attend (without rotations, as Granite 4's),
// its Mamba-2 layers of 8 heads of 16 values (inner 128, twice the
// stream), a state of 32 per value, 2 groups of B and C and a kernel of
// 4; Granite's multipliers as the granite rows have them.
func graniteHybridSpec(typ tensor.Type) modelgen.Spec {
	return modelgen.Spec{Arch: "granitehybrid",
		Shape:  modelgen.Shape{Dim: 64, HiddenDim: 160, Layers: 6, Heads: 4, KVHeads: 2, VocabSize: 384, ContextLength: 128},
		Family: modelgen.Family{EmbeddingScale: 12, AttentionScale: 0.0625, ResidualScale: 0.22, LogitScale: 8},
		Hybrid: &modelgen.GraniteHybrid{Attention: []int{2, 5}, ConvKernel: 4, StateSize: 32, Groups: 2, Heads: 8},
		Type:   typ, Seed: 14, Std: 0.1, OutputStd: 4, SeparateOutput: true, MuteSpecial: true}
}

// graniteHybridMoESpec is graniteHybridSpec with a mixture of experts for
// every feed-forward, as granite-4.0-h-tiny's: 8 experts of 64 units, 2
// chosen for each token, beside a shared expert of 96.
func graniteHybridMoESpec(typ tensor.Type) modelgen.Spec {
	sp := graniteHybridSpec(typ)
	sp.HiddenDim = 64
	sp.MoE = modelgen.MoE{Experts: 8, ExpertsUsed: 2, SharedHiddenDim: 96}
	return sp
}

// naiveGraniteHybrid is a float64 transcription of a Granite 4 hybrid,
// written from Mamba-2's formulas as llama.cpp's graph states them
// (build_mamba2_layer) and reading its weights by name from the file and
// its shape from the spec: the reference the engine's Mamba-2 layers are
// checked against. Its attention layers attend without rotations, as
// Granite 4's do.
type naiveGraniteHybrid struct {
	*naiveModel
	conv, ssm [][]float64 // per layer: (channels, kernel−1) latest inputs; (heads, headDim, state)
}

// flat is the tensor name's values, row after row.
func (n *naiveGraniteHybrid) flat(name string) []float64 {
	m, ok := n.tensor(name)
	if !ok {
		return nil
	}
	row := make([]float32, m.Cols)
	var out []float64
	for r := range m.Rows {
		m.Row(row, r)
		for _, v := range row {
			out = append(out, float64(v))
		}
	}
	return out
}

// mamba2 is layer l's mixer for one token of normalised input h.
func (n *naiveGraniteHybrid) mamba2(l int, h []float64) []float64 {
	sp, hy := n.sp, n.sp.Hybrid
	name := func(s string) string { return fmt.Sprintf("blk.%d.%s", l, s) }
	inner, ns, heads, groups, kernel := 2*sp.Dim, hy.StateSize, hy.Heads, hy.Groups, hy.ConvKernel
	channels, hd := inner+2*groups*ns, inner/heads
	if n.conv == nil {
		n.conv, n.ssm = make([][]float64, sp.Layers), make([][]float64, sp.Layers)
	}
	if n.conv[l] == nil {
		n.conv[l], n.ssm[l] = make([]float64, channels*(kernel-1)), make([]float64, inner*ns)
	}
	p := n.matVec(name("ssm_in.weight"), h)
	z, xBC, dt := p[:inner], p[inner:inner+channels], p[inner+channels:]
	w, bias := n.flat(name("ssm_conv1d.weight")), n.vector(name("ssm_conv1d.bias"))
	silu := func(v float64) float64 { return v / (1 + math.Exp(-v)) }
	for ch := range channels {
		window := append(slices.Clone(n.conv[l][ch*(kernel-1):(ch+1)*(kernel-1)]), xBC[ch])
		copy(n.conv[l][ch*(kernel-1):], window[1:])
		sum := bias[ch]
		for j, v := range window {
			sum += v * w[ch*kernel+j]
		}
		xBC[ch] = silu(sum)
	}
	x, B, C := xBC[:inner], xBC[inner:inner+groups*ns], xBC[inner+groups*ns:]
	a, d, dtBias := n.flat(name("ssm_a")), n.flat(name("ssm_d")), n.vector(name("ssm_dt.bias"))
	y := make([]float64, inner)
	for head := range heads {
		delta := math.Log1p(math.Exp(dt[head] + dtBias[head]))
		g := head / (heads / groups)
		for i := range hd {
			v := head*hd + i
			s := n.ssm[l][v*ns : (v+1)*ns]
			for j := range s {
				s[j] = s[j]*math.Exp(delta*a[head]) + delta*x[v]*B[g*ns+j]
				y[v] += s[j] * C[g*ns+j]
			}
			y[v] += d[head] * x[v]
		}
	}
	for i := range y {
		y[i] *= silu(z[i])
	}
	norm := n.flat(name("ssm_norm.weight"))
	gw := inner / groups
	for g := range groups {
		copy(y[g*gw:], n.rmsWith(y[g*gw:(g+1)*gw], norm[g*gw:(g+1)*gw]))
	}
	return n.matVec(name("ssm_out.weight"), y)
}

// step runs token at the next position and returns the logits.
func (n *naiveGraniteHybrid) step(token int, pos int) []float64 {
	sp := n.sp
	emb, _ := n.tensor("token_embd.weight")
	row := make([]float32, sp.Dim)
	emb.Row(row, token)
	x := make([]float64, sp.Dim)
	for i, v := range row {
		x[i] = float64(v) * float64(sp.EmbeddingScale)
	}
	if n.keys == nil {
		n.keys, n.vals = make([][][]float64, sp.Layers), make([][][]float64, sp.Layers)
	}
	hd := sp.HeadSize()
	for l := range sp.Layers {
		name := func(s string) string { return fmt.Sprintf("blk.%d.%s", l, s) }
		h := n.rms(x, name("attn_norm.weight"))
		var out []float64
		if slices.Contains(sp.Hybrid.Attention, l) {
			q, k, v := n.matVec(name("attn_q.weight"), h), n.matVec(name("attn_k.weight"), h), n.matVec(name("attn_v.weight"), h)
			n.keys[l], n.vals[l] = append(n.keys[l], k), append(n.vals[l], v)
			att := make([]float64, sp.Heads*hd)
			for head := range sp.Heads {
				kvh := head * sp.KVHeads / sp.Heads
				scores := make([]float64, pos+1)
				for t := range scores {
					for i := range hd {
						scores[t] += q[head*hd+i] * n.keys[l][t][kvh*hd+i]
					}
					scores[t] *= float64(sp.AttentionScale)
				}
				n.attend(att[head*hd:(head+1)*hd], scores, n.vals[l], kvh*hd)
			}
			out = n.matVec(name("attn_output.weight"), att)
		} else {
			out = n.mamba2(l, h)
		}
		n.scaleBy(out, float64(sp.ResidualScale))
		add(x, out)
		h = n.rms(x, name("ffn_norm.weight"))
		gate, up := n.matVec(name("ffn_gate.weight"), h), n.matVec(name("ffn_up.weight"), h)
		for i, g := range gate {
			gate[i] = g / (1 + math.Exp(-g)) * up[i]
		}
		down := n.matVec(name("ffn_down.weight"), gate)
		n.scaleBy(down, float64(sp.ResidualScale))
		add(x, down)
	}
	logits := n.matVec("output.weight", n.rms(x, "output_norm.weight"))
	n.scaleBy(logits, 1/float64(sp.LogitScale))
	return logits
}

// TestGraniteHybridMatchesNaiveReference: the engine's logits at every
// position of a prompt are the float64 reference's, for Mamba-2 layers of
// one group and of several (each head reading its group's B and C), with
// a kernel of 4 and of 2.
func TestGraniteHybridMatchesNaiveReference(t *testing.T) {
	twoGroups := graniteHybridSpec(tensor.F32)
	oneGroup := graniteHybridSpec(tensor.F32)
	oneGroup.Hybrid = &modelgen.GraniteHybrid{Attention: []int{0, 3}, ConvKernel: 2, StateSize: 16, Groups: 1, Heads: 4}
	oneGroup.Layers = 4
	for _, tt := range []struct {
		name string
		spec modelgen.Spec
	}{{"two groups", twoGroups}, {"one group, kernel 2", oneGroup}} {
		t.Run(tt.name, func(t *testing.T) {
			data := testmodel.GGUF(t, tt.spec)
			m, err := Load(data, LoadOptions{})
			require.NoError(t, err)
			f, err := gguf.Parse(data)
			require.NoError(t, err)
			sp := tt.spec
			sp.NormEps = modelgen.DefaultNormEps // the file's
			ref := &naiveGraniteHybrid{naiveModel: &naiveModel{f: f, sp: sp}}
			s := newSession(t, m)
			for pos, tok := range []int{5, 270, 5, 299, 42, 42, 100, 3, 260, 7, 8, 9} {
				want := ref.step(tok, pos)
				require.NoError(t, s.forward(tok, pos, true))
				for i, w := range want {
					require.InDelta(t, w, s.logits[i], 1e-4*math.Max(1, math.Abs(w)), "pos %d logit %d", pos, i)
				}
			}
		})
	}
}

// TestGraniteHybridBlockIsTokenByToken: a prompt evaluated in blocks
// leaves exactly the logits, the Mamba-2 layers' states and the attention
// layers' cache that its tokens one by one leave, whatever the block size
// (blocks of 32, 7 and 1 over 45 tokens), and the next tokens continue
// from them alike; with dense feed-forwards and with experts.
func TestGraniteHybridBlockIsTokenByToken(t *testing.T) {
	for _, sp := range []modelgen.Spec{graniteHybridSpec(tensor.F32), graniteHybridSpec(tensor.Q8_0), graniteHybridMoESpec(tensor.Q8_0)} {
		typ := fmt.Sprintf("%v experts %d", sp.Type, sp.Experts)
		m, err := Load(testmodel.GGUF(t, sp), LoadOptions{})
		require.NoError(t, err)
		prompt := make([]int, 45)
		for i := range prompt {
			prompt[i] = 3 + (i*37)%380
		}
		byToken := func() *Session {
			s, err := m.NewSession(SessionOptions{PromptBlock: 1})
			require.NoError(t, err)
			for pos, tok := range prompt {
				require.NoError(t, s.forward(tok, pos, pos == len(prompt)-1))
			}
			return s
		}
		for _, block := range []int{32, 7} {
			t.Run(fmt.Sprintf("%s block %d", typ, block), func(t *testing.T) {
				want := byToken()
				s, err := m.NewSession(SessionOptions{PromptBlock: block})
				require.NoError(t, err)
				for at := 0; at < len(prompt); at += block {
					end := min(at+block, len(prompt))
					require.NoError(t, s.forwardBlock(prompt[at:end], at, end == len(prompt)))
				}
				assert.Equal(t, want.logits, s.logits)
				assert.Equal(t, want.rec.conv, s.rec.conv)
				assert.Equal(t, want.rec.ssm, s.rec.ssm)
				assert.Equal(t, want.kv.k, s.kv.k)
				assert.Equal(t, want.kv.v, s.kv.v)
				for i, tok := range []int{11, 12} {
					pos := len(prompt) + i
					require.NoError(t, s.forward(tok, pos, true))
					require.NoError(t, want.forward(tok, pos, true))
					assert.Equal(t, want.logits, s.logits)
				}
			})
		}
	}
}

// TestGraniteHybridDecodeAllocatesNothing: once a session has evaluated a
// prompt block and a token, its Mamba-2 layers' scratch and state exist,
// and neither a decoded token nor another block allocates.
func TestGraniteHybridDecodeAllocatesNothing(t *testing.T) {
	race.SkipAllocationCount(t)
	m, err := Load(testmodel.GGUF(t, graniteHybridSpec(tensor.Q8_0)), LoadOptions{})
	require.NoError(t, err)
	for _, kv := range []KVType{KVF32, KVF16} {
		s := newSessionKV(t, m, kv)
		block := []int{5, 6, 7, 8, 9, 10, 11, 12}
		require.NoError(t, s.forwardBlock(block, 0, true))
		pos := len(block)
		allocs := testing.AllocsPerRun(40, func() {
			require.NoError(t, s.forward(1+pos%250, pos, true))
			pos++
		})
		assert.Zero(t, allocs, "a decoded token, %v cache", kv)
		allocs = testing.AllocsPerRun(2, func() {
			require.NoError(t, s.forwardBlock(block, 0, true))
		})
		assert.Zero(t, allocs, "a prompt block, %v cache", kv)
	}
}
