package sampling

import (
	"maps"
	"slices"
)

// heapSelectMax is the largest top-k (or vocabulary, when top-k is off) that
// selectTopK handles; above it a full radix sort (linear, but with a larger
// constant) is cheaper than the heap.
const heapSelectMax = 1024

// Sampler picks the next token from a logit vector with the chain that its
// Params configure. It owns its PRNG and penalty window and allocates every
// buffer in New, so Sample allocates nothing. A Sampler is not safe for
// concurrent use; give each generation its own.
type Sampler struct {
	params   Params    // as given to New; LogitBias lives in biasIDs/biasVals
	vocab    int       // vocabulary size; every logit vector has this length
	topK     int       // candidates kept by top-k, in [1, vocab] (vocab = off)
	biasIDs  []int32   // (len(LogitBias)) token ids with a bias, ascending
	biasVals []float32 // (len(LogitBias)) their biases
	penalize bool      // whether any of the three penalties is on
	window   *window   // the recent tokens the penalties look at
	rng      rng

	work     []float32           // (vocab) logits after bias and penalties, indexed by id
	cand     []candidate         // (topK) candidates in candidate order
	keys     []uint64            // (vocab) radix-sort words; nil when top-k selects by heap
	tmp      []uint64            // (vocab) radix-sort scratch; nil when top-k selects by heap
	traceTop [TraceLen]candidate // SampleTrace's most likely tokens
}

// New validates p for a vocabulary of vocabSize tokens and returns a Sampler
// with every buffer allocated: 12 bytes per vocabulary entry, plus 32 more
// when the chain must order the whole vocabulary (Temperature > 0 and top-k
// off or above 1024), plus the penalty window.
func New(p Params, vocabSize int) (*Sampler, error) {
	if err := p.Validate(vocabSize); err != nil {
		return nil, err
	}
	s := &Sampler{
		params:   p,
		vocab:    vocabSize,
		topK:     vocabSize,
		penalize: (p.RepeatPenalty != 0 && p.RepeatPenalty != 1) || p.PresencePenalty != 0 || p.FrequencyPenalty != 0,
		work:     make([]float32, vocabSize),
	}
	s.params.LogitBias = nil // the caller keeps its map; we keep a sorted copy
	for _, id := range slices.Sorted(maps.Keys(p.LogitBias)) {
		s.biasIDs = append(s.biasIDs, int32(id))
		s.biasVals = append(s.biasVals, p.LogitBias[id])
	}
	limit := p.PenaltyLastN
	if limit == 0 {
		limit = DefaultPenaltyLastN
	}
	s.window = newWindow(limit, vocabSize)
	if p.TopK > 0 && p.TopK < vocabSize {
		s.topK = p.TopK
	}
	if p.Temperature > 0 {
		if s.topK > heapSelectMax {
			s.keys = make([]uint64, vocabSize)
			s.tmp = make([]uint64, vocabSize)
			s.cand = make([]candidate, vocabSize)
		} else {
			s.cand = make([]candidate, s.topK)
		}
	}
	s.Reset()
	return s, nil
}

// VocabSize returns the vocabulary size the Sampler was made for: the length
// Sample expects.
func (s *Sampler) VocabSize() int { return s.vocab }

// Sample returns the next token id for logits, which it does not modify.
// len(logits) must be VocabSize(); Sample never panics on a wrong length: ids
// past the end count as -Inf and extra logits are ignored. The result is
// always in [0, VocabSize()). Sample allocates nothing.
func (s *Sampler) Sample(logits []float32) int {
	return s.sample(logits, nil)
}

// SampleTrace is Sample that also describes, in tr, how the chain shaped the
// distribution (see Trace). It consumes the PRNG exactly as Sample does, so a
// generation may mix the two freely. A nil tr makes it Sample. It allocates
// nothing, but costs two extra passes over the vocabulary.
func (s *Sampler) SampleTrace(logits []float32, tr *Trace) int {
	return s.sample(logits, tr)
}

// Accept records a token (of the prompt or generated) as the newest in the
// penalty window. Ids outside [0, VocabSize()) are ignored: no logit could be
// penalised for them. Accept may allocate while a window longer than 65536
// tokens fills up.
func (s *Sampler) Accept(id int) {
	if id < 0 || id >= s.vocab {
		return
	}
	s.window.accept(int32(id))
}

// Reset forgets every accepted token and reseeds the PRNG from Params.Seed, so
// the same logits then give the same ids as after New.
func (s *Sampler) Reset() {
	s.window.reset()
	s.rng = newRNG(s.params.Seed)
}

// sample runs the chain; tr, if not nil, receives the trace.
func (s *Sampler) sample(logits []float32, tr *Trace) int {
	p := &s.params
	loadLogits(s.work, logits)
	applyLogitBias(s.work, s.biasIDs, s.biasVals)
	if s.penalize {
		applyPenalties(s.work, s.window.present, s.window.counts, p.RepeatPenalty, p.PresencePenalty, p.FrequencyPenalty)
	}
	if tr != nil {
		s.traceLogits(tr)
	}
	if p.Temperature == 0 {
		id := argmax(s.work)
		if tr != nil {
			tr.setGreedy(id)
		}
		return id
	}

	// One uniform per call, whatever happens next, so that the PRNG stream
	// depends only on the number of calls.
	u := s.rng.float64()
	var c []candidate
	if s.keys == nil {
		c = selectTopK(s.work, s.topK, s.cand)
	} else {
		c = sortAll(s.work, s.keys, s.tmp, s.cand)[:s.topK]
	}
	if c = softmax(c, p.Temperature); len(c) == 0 {
		// Every logit is -Inf: no distribution, so behave like argmax.
		if tr != nil {
			tr.setBanned(0, u)
		}
		return 0
	}
	if p.TopP > 0 && p.TopP < 1 {
		c = c[:topP(c, p.TopP)]
	}
	if p.MinP > 0 {
		c = minP(c, p.MinP)
	}
	total := totalP(c)
	i := draw(c, u, total)
	if tr != nil {
		tr.setDraw(c, i, u, total)
	}
	return int(c[i].id)
}
