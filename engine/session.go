package engine

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// DefaultContextLength caps a session's context when SessionOptions does not
// say: models trained for 128k positions would otherwise allocate gigabytes
// of KV cache up front.
const DefaultContextLength = 4096

// SessionOptions configure a Session. The zero value is useful: the model's
// context, capped at DefaultContextLength.
type SessionOptions struct {
	// ContextLength is the positions the session can hold (and sizes its KV
	// cache); 0 means min(the model's context length, DefaultContextLength).
	// The parts of a split model must all be given the same.
	ContextLength int
	// Peers connects the session of a part of a split model (Model.Cut) to
	// the other parts' sessions: required for a part, nil for a whole model.
	// engine/shard makes them.
	Peers Peers
	// PromptBlock is how many prompt tokens are evaluated at once (each
	// weight row read once per block; see DefaultPromptBlock): 0 means
	// DefaultPromptBlock, 1 token by token as decoding does. The results are
	// the same bits whatever it is. The parts of a split model must all be
	// given the same (their hello checks it).
	PromptBlock int
	// KVType is how the KV cache holds keys and values: KVF32, KVF16 (half
	// the memory), or KVAuto, the zero value: F16 for a model of more than
	// AutoKVF16Parameters parameters, F32 otherwise (Model.DefaultKVType).
	// The parts of a split model must all be given the same.
	KVType KVType
	// Threads is how many threads the session's matrix products split
	// their output rows among: 0 means runtime.GOMAXPROCS(0) (natively,
	// every core; 1 in WebAssembly), 1 the calling goroutine alone. The
	// threads come from one process-wide pool that every session shares
	// (see tensor.Workspace.SetThreads), and each row is computed as with
	// one thread: the results are the same bits whatever it is.
	Threads int
	// Device, when set, runs the session's forward pass there (a GPU:
	// engine/gpu) instead of on the CPU, its KV cache kept on the device;
	// the model must be one Model.DeviceSupports accepts. Close the
	// session to free the device's buffers.
	Device Device
}

// MaxThreads bounds SessionOptions.Threads.
const MaxThreads = 256

// Session is one conversation with a model: it owns the KV cache, the
// position and the scratch buffers. A session runs one generation at a time;
// a call made while another runs fails with ErrBusy. Sessions of the same
// model are independent and may run in parallel.
type Session struct {
	model   *Model
	context int       // positions this session holds
	state   *runState // scratch buffers
	logits  []float32 // (vocab) the last forward pass's logits, the whole vector
	kv      kvCache   // keys and values, as kv.typ says: (layers, positions, kvDim), a sliding layer's positions a ring
	rope    ropeTable // rotations for every position, by the model's base and scaling
	// layerRopes are the rotations each layer turns by: rope, or a table
	// of the layer's own base and scaling (gemma3's sliding layers).
	layerRopes []*ropeTable
	tokens     []int // the ids whose keys and values are in the cache, in order
	peers      Peers // the other parts of a split model; wholeModel{} otherwise
	// promptBlock is how many prompt tokens a block holds (1: no blocks),
	// and block their scratch, allocated at the first block.
	promptBlock int
	block       *activations
	projection  *projection // a split model's rows of Wo for prompt blocks, made at the first block
	oneToken    [1]int      // forward's block of one
	// attnParts is the attention scratch of a prompt block's threads but
	// the first (allocated at the first block split among threads), and
	// attnTask the split under way.
	attnParts []attnScratch
	attnTask  attnTask
	// enc is an encoder's scratch (encoder.go), allocated at its first
	// pass; hidden, while a decoder embeds (embed.go), receives each
	// evaluated token's final state.
	enc    *encoderState
	hidden func(x []float32)
	// score, while Score runs, receives each evaluated token's
	// next-token logits.
	score func(i int, logits []float32) error
	// device runs the forward pass when set (SessionOptions.Device), dev
	// being its side of this session and devX the embeddings of a block
	// as they are written to it.
	device Device
	dev    DeviceSession
	devX   []float32
	// devScores are a block's logits read back from the device (Score).
	devScores []float32
	// rec is the recurrent layers' state (recurrent.go), beside the KV
	// cache; empty for a model without recurrent layers.
	rec recurrentState
	// shiftMem is the scratch of context shifts (shift.go), allocated at
	// the first.
	shiftMem *shiftScratch
	mu       sync.Mutex // held while a generation (or a Forward) runs

	// moe is the scratch of a model's mixtures of experts (moe.go); nil
	// for a model without experts.
	moe *moeScratch

	// lastLogits reports whether logits are the model's next-token logits
	// after the last cached token (a generation's prefill or decode step
	// finished, and no grammar masked them), which SaveState then saves;
	// restored, that the session's state was saved or loaded (SaveState,
	// LoadState; until Reset), so that while lastLogits holds a prompt
	// equal to the cached tokens needs no pass at all, in the saved
	// session as in its restored copies (state.go).
	lastLogits, restored bool
}

// NewSession allocates a session's buffers (the KV cache dominates:
// 2 · layers · context · kvDim values, float32 or F16, less for
// sliding-window layers: see Config.KVCacheBytes).
func (m *Model) NewSession(opts SessionOptions) (*Session, error) {
	positions, err := m.SessionContextLength(opts.ContextLength)
	if err != nil {
		return nil, err
	}
	if err := opts.KVType.check(); err != nil {
		return nil, err
	}
	if opts.Device != nil {
		if err := m.DeviceSupports(); err != nil {
			return nil, err
		}
	}
	kvType := opts.KVType
	if kvType == KVAuto {
		kvType = m.DefaultKVType()
	}
	if err := m.CheckContextMemory(positions, kvType); err != nil {
		return nil, err
	}
	peers := opts.Peers
	switch {
	case m.part != nil && peers == nil:
		return nil, fmt.Errorf("%w: a part of a split model needs SessionOptions.Peers to reach the other parts", ErrInvalidOption)
	case m.part == nil && peers != nil:
		return nil, fmt.Errorf("%w: SessionOptions.Peers is for the parts of a split model; this model is whole", ErrInvalidOption)
	case peers == nil:
		peers = wholeModel{}
	}
	block := opts.PromptBlock
	switch {
	case block < 0:
		return nil, optionError("prompt_block", "must be >= 0 (0: %d), got %d", DefaultPromptBlock, block)
	case block == 0:
		block = DefaultPromptBlock
	}
	threads := opts.Threads
	switch {
	case threads < 0 || threads > MaxThreads:
		return nil, optionError("threads", "must be 0 (every core) to %d, got %d", MaxThreads, threads)
	case threads == 0:
		threads = runtime.GOMAXPROCS(0)
	}
	w := m.weights
	if opts.Device == nil {
		if err := w.pack(m.arch, m.config.Layers); err != nil {
			return nil, err
		}
	}
	if m.arch.encoder {
		// No cache, no decoding: a workspace for the products, and the
		// rotations of nomic-bert's positions.
		c := m.config
		st := &runState{ws: tensor.NewWorkspace(max(c.Dim, c.HiddenDim, c.QDim()))}
		st.ws.SetThreads(threads)
		return &Session{model: m, context: positions, state: st, peers: peers, promptBlock: 1,
			rope: newRopeTable(c, c.RopeTheta, c.RopeScale, nil, positions)}, nil
	}
	st := newRunState(m.config, w, positions)
	st.ws.SetThreads(threads)
	if kvType == KVF16 && opts.Device == nil {
		st.allocF16(m.config, len(st.q), len(st.k), positions, min(block, positions))
	}
	s := &Session{
		model:       m,
		context:     positions,
		state:       st,
		logits:      st.logits,
		kv:          kvCache{typ: kvType},
		rope:        newRopeTable(m.config, m.config.RopeTheta, m.config.RopeScale, w.ropeFactors(m.config, positions), positions),
		tokens:      make([]int, 0, positions),
		peers:       peers,
		promptBlock: min(block, positions),
	}
	s.layerRopes = layerRopes(m.config, &s.rope, w.RopeFreqFactors, positions)
	if opts.Device != nil {
		s.device = opts.Device
		if err := s.newDeviceSession(opts.Device); err != nil {
			return nil, err
		}
		return s, nil
	}
	s.kv = newLayersKVCache(m.config, kvType, func(l int) int { return rowsOf(w.Layers[l].Wk) }, positions, s.promptBlock)
	s.rec = newRecurrentState(m.config)
	if m.config.hasExperts() {
		s.moe = newMoEScratch(m.config, s.promptBlock)
	}
	return s, nil
}

// layerRopes are the rotations each layer of c turns by, over context
// positions: model, or for a layer of a base or scaling of its own a table
// of them (whose frequencies factors divide).
func layerRopes(c Config, model *ropeTable, factors []float32, context int) []*ropeTable {
	type rotation struct {
		theta, scale float32
		dims         int
		factors      bool
	}
	out := make([]*ropeTable, c.Layers)
	own := map[rotation]*ropeTable{{c.RopeTheta, c.RopeScale, c.RotaryDims(), true}: model}
	for l := range out {
		a := c.Layer(l).Attention
		theta, scale := c.rotation(a)
		key := rotation{theta, scale, c.layerRotaryDims(l), !a.NoRopeFactors}
		r, ok := own[key]
		if !ok {
			f := factors
			if a.NoRopeFactors {
				f = nil
			}
			t := newRopeTableDims(c, key.dims, theta, scale, f, context)
			r = &t
			own[key] = r
		}
		out[l] = r
	}
	return out
}

// SessionContextLength is the number of positions a session made with
// SessionOptions.ContextLength = requested holds, or an error wrapping
// ErrInvalidOption when requested is out of range: what NewSession checks,
// without allocating the session. A context longer than the model was
// trained for is allowed, as llama.cpp allows it (ContextWarning says what
// it costs), up to MaxContextLength, unless the model's positions are
// learned embeddings, which hold only the trained ones; NewSession also
// checks that the session fits in memory (see CheckContextMemory).
func (m *Model) SessionContextLength(requested int) (int, error) {
	return sessionContextLength(m.arch, m.config, requested)
}

// ContextLength is the number of positions the session holds.
func (s *Session) ContextLength() int { return s.context }

// KVType is how the session's KV cache holds keys and values: KVF32 or
// KVF16 (KVAuto resolved).
func (s *Session) KVType() KVType { return s.kv.typ }

// Threads is how many threads the session's matrix products split among
// (SessionOptions.Threads resolved).
func (s *Session) Threads() int { return s.state.ws.Threads() }

// Model is the model the session runs.
func (s *Session) Model() *Model { return s.model }

// Reset forgets the cached conversation.
func (s *Session) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = s.tokens[:0]
	s.rec.reset()
	s.lastLogits, s.restored = false, false
}

// Forward runs token at position pos through the model, as one step of a
// generation does, storing its key and value at pos in the KV cache and,
// with logits, computing the next-token logits (Logits). It is the engine's
// lowest-level step, for drivers other than Generate (ForwardBlock runs a
// block of tokens: engine/shard's followers run every step their leader
// starts with it); the session forgets its cached conversation, so the
// next generation evaluates its prompt from the start. It fails with ErrBusy while a generation runs.
// The positions before pos that it attends to must be in the cache: a
// sliding-window layer's ring holds only the latest (see AttentionSpec.Window), so
// a driver evaluates positions in order.
func (s *Session) Forward(token, pos int, logits bool) error {
	if !s.mu.TryLock() {
		return ErrBusy
	}
	defer s.mu.Unlock()
	one := [1]int{token}
	if err := s.checkStep(one[:], pos, false); err != nil {
		return err
	}
	s.tokens = s.tokens[:0]
	return s.forward(token, pos, logits)
}

// ForwardBlock runs tokens, at positions pos..pos+len(tokens)-1, through
// the model as one block of a generation's prompt does (all at once, with
// the same bits as one by one), storing their keys and values in the KV
// cache and, with logits, computing the last token's next-token logits. It
// is Forward for a block of 1 to PromptBlock tokens, and like Forward it
// forgets the cached conversation.
func (s *Session) ForwardBlock(tokens []int, pos int, logits bool) error {
	if !s.mu.TryLock() {
		return ErrBusy
	}
	defer s.mu.Unlock()
	if err := s.checkStep(tokens, pos, true); err != nil {
		return err
	}
	s.tokens = s.tokens[:0]
	return s.forwardBlock(tokens, pos, logits)
}

// checkStep checks a step of Forward (one token, block false) or
// ForwardBlock (block true) before it runs: a model that generates, a block
// of 1 to PromptBlock tokens, each in the vocabulary, at positions inside
// the context. Its errors name what Forward or ForwardBlock was given.
func (s *Session) checkStep(tokens []int, pos int, block bool) error {
	if !s.model.Generates() {
		return errEncoder(s.model)
	}
	if block && (len(tokens) < 1 || len(tokens) > s.promptBlock) {
		return optionError("tokens", "must hold 1 to %d tokens (the prompt block), got %d", s.promptBlock, len(tokens))
	}
	vocab := s.model.config.VocabSize
	for i, t := range tokens {
		switch {
		case t >= 0 && t < vocab:
		case block:
			return optionError("token", "must be in 0..%d, got %d (tokens[%d])", vocab-1, t, i)
		default:
			return optionError("token", "must be in 0..%d, got %d", vocab-1, t)
		}
	}
	switch last := pos + len(tokens) - 1; {
	case pos >= 0 && last < s.context:
		return nil
	case block:
		return optionError("position", "must be in 0..%d for every token, got %d..%d", s.context-1, pos, last)
	default:
		return optionError("position", "must be in 0..%d, got %d", s.context-1, pos)
	}
}

// PromptBlock is how many prompt tokens the session evaluates at once
// (SessionOptions.PromptBlock, at most its context; 1 for an encoder).
func (s *Session) PromptBlock() int { return s.promptBlock }

// Logits are the next-token logits the last forward pass computed: valid
// until the next, and not to be modified.
func (s *Session) Logits() []float32 { return s.logits }
