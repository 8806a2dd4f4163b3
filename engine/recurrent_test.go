package engine

import (
	"errors"
	"testing"
)

// hybridConfig is a config of four layers, a short convolution of kernel 3
// at layers 0 and 2 and attention at 1 and 3.
func hybridConfig() Config {
	c := Config{Dim: 8, HiddenDim: 16, Layers: 4, Heads: 2, KVHeads: 1, VocabSize: 300, ContextLength: 64,
		RopeTheta: 10000, RopeScale: 1, NormEps: 1e-5, ShortConvKernel: 3}
	c.LayerSpecs = []LayerSpec{{Kind: LayerShortConv}, {}, {Kind: LayerShortConv}, {}}
	return c
}

func TestHybridMemory(t *testing.T) {
	c := hybridConfig()
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	// Two short-convolution layers hold 2 positions of 8 channels each, in
	// float32; the KV cache holds the two attention layers only.
	if got, want := c.RecurrentStateBytes(), int64(2*2*8*4); got != want {
		t.Errorf("RecurrentStateBytes = %d, want %d", got, want)
	}
	if got, want := c.KVCacheBytes(64, KVF32), int64(2*2*64*c.KVDim()*4); got != want {
		t.Errorf("KVCacheBytes = %d, want %d (attention layers only)", got, want)
	}
	if m := EstimateMemory(c, 1000, 64, KVF16); m.RecurrentState != c.RecurrentStateBytes() || m.Total != m.Weights+m.KVCache+m.RecurrentState+m.Scratch {
		t.Errorf("EstimateMemory = %+v, want the recurrent state (%d bytes) counted", m, c.RecurrentStateBytes())
	}
	r := newRecurrentState(c)
	for l, want := range []int{16, 0, 16, 0} {
		if len(r.conv[l]) != want || len(r.ssm[l]) != 0 {
			t.Errorf("layer %d: state of %d and %d values, want %d and 0", l, len(r.conv[l]), len(r.ssm[l]), want)
		}
	}
	if (Config{Layers: 2}).Recurrent() || !c.Recurrent() {
		t.Error("Recurrent: want true for the hybrid only")
	}
}

func TestHybridConfigRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   error
	}{
		{"kernel of one position", func(c *Config) { c.ShortConvKernel = 1 }, ErrFormat},
		{"kind not computed", func(c *Config) { c.LayerSpecs[1].Kind = LayerMamba2 + 1 }, ErrUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := hybridConfig()
			tc.change(&c)
			if err := c.validate(); !errors.Is(err, tc.want) {
				t.Errorf("validate = %v, want %v", err, tc.want)
			}
		})
	}
}

// The prefix rule: a session with recurrent layers keeps its cached tokens
// only when all of them begin the prompt and the prompt is longer; a
// model of attention alone keeps any common prefix (the last prompt token
// running again).
func TestReusedPrefix(t *testing.T) {
	for _, tc := range []struct {
		name           string
		recurrent      bool
		cached, prompt []int
		statePos, want int
	}{
		{"attention: common prefix", false, []int{1, 2, 3, 4}, []int{1, 2, 9}, 4, 2},
		{"attention: same prompt runs its last token again", false, []int{1, 2, 3}, []int{1, 2, 3}, 3, 2},
		{"recurrent: extends the cache", true, []int{1, 2, 3}, []int{1, 2, 3, 4}, 3, 3},
		{"recurrent: diverges", true, []int{1, 2, 3, 4}, []int{1, 2, 9}, 4, 0},
		{"recurrent: shorter", true, []int{1, 2, 3, 4}, []int{1, 2}, 4, 0},
		{"recurrent: same prompt", true, []int{1, 2, 3}, []int{1, 2, 3}, 3, 0},
		{"recurrent: state past the cached tokens", true, []int{1, 2}, []int{1, 2, 3}, 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := hybridConfig()
			if !tc.recurrent {
				c.LayerSpecs = nil
			}
			s := &Session{tokens: tc.cached, rec: newRecurrentState(c), kv: newKVCache(c, KVF32, c.KVDim(), c.ContextLength)}
			s.rec.pos = tc.statePos
			if got := s.reusedPrefix(tc.prompt); got != tc.want {
				t.Errorf("reusedPrefix = %d, want %d", got, tc.want)
			}
		})
	}
}

// A pass at position 0 zeroes the recurrent state; one at the position the
// state has reached moves it on; one elsewhere is an error naming the
// position.
func TestBeginRecurrent(t *testing.T) {
	s := &Session{rec: newRecurrentState(hybridConfig())}
	s.rec.conv[0][0] = 1
	if err := s.beginRecurrent(0, 5); err != nil || s.rec.conv[0][0] != 0 || s.rec.pos != 5 {
		t.Fatalf("at 0: %v, state %v at %d; want it zeroed at 5", err, s.rec.conv[0][0], s.rec.pos)
	}
	if err := s.beginRecurrent(5, 1); err != nil || s.rec.pos != 6 {
		t.Fatalf("at 5: %v, at %d; want 6", err, s.rec.pos)
	}
	var oe *OptionError
	if err := s.beginRecurrent(3, 1); !errors.As(err, &oe) || oe.Field != "position" {
		t.Fatalf("at 3: %v, want an option error naming position", err)
	}
	attention := &Session{}
	if err := attention.beginRecurrent(7, 1); err != nil {
		t.Errorf("a model without recurrent layers: %v", err)
	}
}
