package engine

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"
)

// Saved sessions. SaveState writes what a session holds of its
// conversation — the cached tokens, the keys and values the KV cache
// holds for them, the recurrent layers' state and the last token's
// logits — and LoadState puts it back in a session of the same model, so
// that the restored session continues with the tokens, bit for bit, that
// the saved one would have: nothing is evaluated again, not even the last
// token. The format (docs/sessions.md), all numbers little-endian:
//
//	magic      "WLMS"
//	version    u32 (1)
//	identity   [32]byte, the model's (Model.Identity)
//	kv type    u32 (KVF32 or KVF16)
//	context    u32, the saving session's context length
//	tokens     u32 n, then n × u32: the cached token ids
//	valid from u32: the oldest position every sliding-window ring holds
//	             for sure (a context shift may leave a ring without kept
//	             positions it had overwritten: Session.Shift); 0 otherwise
//	layers     u32 (the model's layer count), then for each layer
//	             u32 held, u32 kvDim: the positions n−held..n−1 the layer's
//	             cache holds (0 for a recurrent layer and one that shares
//	             another's cache), then their keys, then their values,
//	             held × kvDim each, as f32 or f16 bits as the type says
//	recurrent  for each layer: u32 len, len × f32 (its convolution's
//	             last inputs); u32 len, len × f32 (its matrix state)
//	logits     u32 vocab (0: none), then vocab × f32
//	crc        u32, CRC-32 (IEEE) of every byte before it
//
// Only the used part of the cache is written: a layer holding the whole
// context writes n positions, a sliding-window layer the last of its ring
// (at most its slots). A session on a device (SessionOptions.Device) keeps
// its cache there and refuses; so do a part of a split model and an
// encoder, which keeps no state.

// The saved state's magic and version.
const (
	stateMagic   = "WLMS"
	stateVersion = 1
)

// stateChunk is the bytes SaveState and LoadState convert at once.
const stateChunk = 64 << 10

// SaveState writes the session's state to w (see the format above). From
// then on, as in a session that loads it, a prompt equal to the cached
// tokens is not evaluated again (their logits are at hand). It fails with
// ErrBusy while a generation runs, and with an error wrapping
// ErrStateUnsupported for a session whose state it cannot read.
func (s *Session) SaveState(w io.Writer) error {
	if !s.mu.TryLock() {
		return ErrBusy
	}
	defer s.mu.Unlock()
	if err := s.stateSupported(); err != nil {
		return err
	}
	c := &s.model.config
	crc := crc32.NewIEEE()
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), stateChunk)
	sw := stateWriter{w: bw, buf: make([]byte, stateChunk)}
	id := s.model.Identity()
	sw.bytes([]byte(stateMagic))
	sw.u32(stateVersion)
	sw.bytes(id[:])
	sw.u32(int(s.kv.typ))
	sw.u32(s.context)
	n := len(s.tokens)
	sw.u32(n)
	for _, t := range s.tokens {
		sw.u32(t)
	}
	sw.u32(s.kv.validFrom)
	sw.u32(c.Layers)
	for l := range c.Layers {
		ly, owns := s.ownCache(l)
		if !owns {
			sw.u32(0)
			sw.u32(0)
			continue
		}
		held := min(n, ly.slots)
		sw.u32(held)
		sw.u32(ly.kvDim)
		for _, cache := range [2]int{0, 1} {
			for pos := n - held; pos < n; pos++ {
				at := ly.at + ly.slot(pos)*ly.kvDim
				if s.kv.typ == KVF16 {
					sw.u16s(s.kv.half(cache)[at : at+ly.kvDim])
				} else {
					sw.f32s(s.kv.full(cache)[at : at+ly.kvDim])
				}
			}
		}
	}
	for l := range c.Layers {
		for _, st := range s.rec.layer(l) {
			sw.u32(len(st))
			sw.f32s(st)
		}
	}
	if s.lastLogits && n > 0 {
		sw.u32(len(s.logits))
		sw.f32s(s.logits)
	} else {
		sw.u32(0)
	}
	if sw.err == nil {
		sw.err = bw.Flush()
	}
	if sw.err != nil {
		return fmt.Errorf("engine: saving the session's state: %w", sw.err)
	}
	var sum [4]byte
	binary.LittleEndian.PutUint32(sum[:], crc.Sum32())
	if _, err := w.Write(sum[:]); err != nil {
		return fmt.Errorf("engine: saving the session's state: %w", err)
	}
	// The saved session continues as its restored copies do: a prompt
	// equal to its tokens needs no pass.
	s.restored = true
	return nil
}

// LoadState replaces the session's conversation with the state SaveState
// wrote to r. A state of another model (Model.Identity) or KV type, or
// one of more tokens than the session's context holds, is refused with an
// error wrapping ErrStateMismatch and leaves the session as it was; a
// malformed, truncated or corrupt one is an error wrapping ErrStateFormat
// and leaves the session reset (Reset). It fails with ErrBusy while a
// generation runs.
func (s *Session) LoadState(r io.Reader) (err error) {
	if !s.mu.TryLock() {
		return ErrBusy
	}
	defer s.mu.Unlock()
	if err := s.stateSupported(); err != nil {
		return err
	}
	crc := crc32.NewIEEE()
	br := bufio.NewReaderSize(r, stateChunk)
	sr := stateReader{r: io.TeeReader(br, crc), buf: make([]byte, stateChunk)}
	n, err := s.checkStateHeader(&sr)
	if err != nil {
		return err
	}
	// From here on the session's cache receives the state as it is read:
	// on an error it is reset, so that a half-read state is never used.
	s.tokens = s.tokens[:0]
	s.rec.reset()
	s.lastLogits, s.restored, s.kv.validFrom = false, false, 0
	defer func() {
		if err != nil {
			s.tokens = s.tokens[:0]
			s.rec.reset()
			s.lastLogits, s.restored, s.kv.validFrom = false, false, 0
		}
	}()
	if err := s.readStateBody(&sr, n); err != nil {
		return err
	}
	var sum [4]byte
	if _, err := io.ReadFull(br, sum[:]); err != nil {
		return stateFormatError("its checksum: %v", truncated(err))
	}
	if binary.LittleEndian.Uint32(sum[:]) != crc.Sum32() {
		return stateFormatError("its checksum does not match its bytes (the state is corrupt)")
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return stateFormatError("bytes follow its checksum")
	}
	if s.rec.active() {
		s.rec.pos = n
	}
	s.restored = true
	return nil
}

// CachedTokens is how many tokens the session's cache holds: what
// SaveState saves. Ask it while no generation runs.
func (s *Session) CachedTokens() int { return len(s.tokens) }

// stateSupported reports why the session's state cannot be saved or
// loaded, or nil.
func (s *Session) stateSupported() error {
	switch {
	case s.model.arch.encoder:
		return fmt.Errorf("%w: an encoder keeps no conversation", ErrStateUnsupported)
	case s.model.part != nil:
		return fmt.Errorf("%w: a part of a split model holds part of each position's keys and values", ErrStateUnsupported)
	case s.device != nil:
		return fmt.Errorf("%w: a session on a device keeps its KV cache on the device; use a CPU session (SessionOptions.Device nil) to save and restore", ErrStateUnsupported)
	}
	return nil
}

// checkStateHeader reads the state's header up to its token count and
// checks that the state fits the session: its model, KV type and context.
// It changes nothing in the session.
func (s *Session) checkStateHeader(sr *stateReader) (int, error) {
	var head [4 + 4 + 32]byte
	if err := sr.full(head[:]); err != nil {
		return 0, stateFormatError("its header: %v", err)
	}
	if string(head[:4]) != stateMagic {
		return 0, stateFormatError("it does not start with %q: not a saved session", stateMagic)
	}
	if v := binary.LittleEndian.Uint32(head[4:]); v != stateVersion {
		return 0, stateFormatError("version %d, this engine reads version %d", v, stateVersion)
	}
	if id := s.model.Identity(); !bytes.Equal(head[8:], id[:]) {
		return 0, fmt.Errorf("%w: it was saved by another model (identity %x…, this model's %x…)", ErrStateMismatch, head[8:16], id[:8])
	}
	typ, context, n := sr.u32(), sr.u32(), sr.u32()
	if sr.err != nil {
		return 0, stateFormatError("its header: %v", sr.err)
	}
	if KVType(typ) != s.kv.typ {
		return 0, fmt.Errorf("%w: its KV cache holds %v, this session's %v", ErrStateMismatch, KVType(typ), s.kv.typ)
	}
	if n > s.context || n > context {
		return 0, fmt.Errorf("%w: it holds %d tokens, this session's context %d", ErrStateMismatch, n, s.context)
	}
	if context != s.context {
		// A longer context than the saver's holds the state, unless the
		// model rotates by other frequencies at this length (LongRoPE).
		w := s.model.weights
		if !slices.Equal(w.ropeFactors(s.model.config, context), w.ropeFactors(s.model.config, s.context)) {
			return 0, fmt.Errorf("%w: it was saved at a context of %d, where this model rotates keys otherwise than at this session's %d", ErrStateMismatch, context, s.context)
		}
	}
	return n, nil
}

// readStateBody reads the state after its header, n tokens, into the
// session.
func (s *Session) readStateBody(sr *stateReader, n int) error {
	c := &s.model.config
	for range n {
		t := sr.u32()
		if sr.err == nil && t >= c.VocabSize {
			return stateFormatError("token id %d is not in the vocabulary (%d)", t, c.VocabSize)
		}
		s.tokens = append(s.tokens, t)
	}
	validFrom := sr.u32()
	if sr.err == nil && validFrom > n {
		return stateFormatError("positions from %d are held, of %d", validFrom, n)
	}
	s.kv.validFrom = validFrom
	if layers := sr.u32(); sr.err == nil && layers != c.Layers {
		return stateFormatError("%d layers, the model has %d", layers, c.Layers)
	}
	for l := range c.Layers {
		held, kvDim := sr.u32(), sr.u32()
		if sr.err != nil {
			return stateFormatError("layer %d: %v", l, sr.err)
		}
		ly, owns := s.ownCache(l)
		if !owns {
			if held != 0 || kvDim != 0 {
				return stateFormatError("layer %d holds no keys, the state has %d", l, held)
			}
			continue
		}
		switch {
		case kvDim != ly.kvDim:
			return stateFormatError("layer %d: keys of %d values, the model's %d", l, kvDim, ly.kvDim)
		case held > n || held < min(n, ly.slots):
			return stateFormatError("layer %d holds %d positions of %d, this session's cache needs the last %d", l, held, n, min(n, ly.slots))
		}
		for _, cache := range [2]int{0, 1} {
			for pos := n - held; pos < n; pos++ {
				at := ly.at + ly.slot(pos)*ly.kvDim
				if pos < n-ly.slots {
					sr.skip(kvDim * s.kv.typ.ValueBytes()) // older than this session's ring keeps
				} else if s.kv.typ == KVF16 {
					sr.u16s(s.kv.half(cache)[at : at+kvDim])
				} else {
					sr.f32s(s.kv.full(cache)[at : at+kvDim])
				}
			}
		}
	}
	for l := range c.Layers {
		for i, st := range s.rec.layer(l) {
			if size := sr.u32(); sr.err == nil && size != len(st) {
				return stateFormatError("layer %d: a recurrent state (%d) of %d values, the model's %d", l, i, size, len(st))
			}
			sr.f32s(st)
		}
	}
	switch vocab := sr.u32(); {
	case sr.err != nil:
	case vocab == len(s.logits) && n > 0:
		sr.f32s(s.logits)
		s.lastLogits = true
	case vocab != 0:
		return stateFormatError("logits of %d values, the vocabulary's %d", vocab, len(s.logits))
	}
	if sr.err != nil {
		return stateFormatError("%v", sr.err)
	}
	return nil
}

// ownCache is where layer l's keys and values lie, and whether the layer
// keeps them itself (not a recurrent layer, nor one sharing another's).
func (s *Session) ownCache(l int) (kvLayer, bool) {
	ly := s.kv.layers[l]
	return ly, ly.slots > 0 && s.model.config.kvLayerOf(l) == l
}

// full is the F32 cache's keys (which 0) or values (1).
func (c *kvCache) full(which int) []float32 {
	if which == 0 {
		return c.k
	}
	return c.v
}

// half is the F16 cache's keys (which 0) or values (1).
func (c *kvCache) half(which int) []uint16 {
	if which == 0 {
		return c.k16
	}
	return c.v16
}

// layer is layer l's recurrent state: its convolution's last inputs and
// its matrix state (either may be empty), or nothing for a model without
// recurrent layers.
func (r *recurrentState) layer(l int) [][]float32 {
	if !r.active() {
		return nil
	}
	return [][]float32{r.conv[l], r.ssm[l]}
}

// stateFormatError is an error wrapping ErrStateFormat that says what is
// wrong with the state.
func stateFormatError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrStateFormat, fmt.Sprintf(format, args...))
}

// truncated says an early end of the state as such.
func truncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("the state is truncated")
	}
	return err
}

// stateWriter writes a state's numbers little-endian, keeping the first
// error.
type stateWriter struct {
	w   io.Writer
	buf []byte // stateChunk bytes of conversion
	err error
}

func (w *stateWriter) bytes(b []byte) {
	if w.err == nil {
		_, w.err = w.w.Write(b)
	}
}

func (w *stateWriter) u32(v int) {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(v))
	w.bytes(b[:])
}

func (w *stateWriter) f32s(xs []float32) {
	for len(xs) > 0 {
		n := min(len(xs), len(w.buf)/4)
		for i, x := range xs[:n] {
			binary.LittleEndian.PutUint32(w.buf[4*i:], math.Float32bits(x))
		}
		w.bytes(w.buf[:4*n])
		xs = xs[n:]
	}
}

func (w *stateWriter) u16s(xs []uint16) {
	for len(xs) > 0 {
		n := min(len(xs), len(w.buf)/2)
		for i, x := range xs[:n] {
			binary.LittleEndian.PutUint16(w.buf[2*i:], x)
		}
		w.bytes(w.buf[:2*n])
		xs = xs[n:]
	}
}

// stateReader reads a state's numbers little-endian, keeping the first
// error (an early end as "truncated"); after one, every read gives zeros.
type stateReader struct {
	r   io.Reader
	buf []byte // stateChunk bytes of conversion
	err error
}

func (r *stateReader) full(b []byte) error {
	if r.err == nil {
		if _, err := io.ReadFull(r.r, b); err != nil {
			r.err = truncated(err)
		}
	}
	if r.err != nil {
		clear(b)
	}
	return r.err
}

func (r *stateReader) u32() int {
	var b [4]byte
	r.full(b[:])
	return int(binary.LittleEndian.Uint32(b[:]))
}

func (r *stateReader) f32s(xs []float32) {
	for len(xs) > 0 {
		n := min(len(xs), len(r.buf)/4)
		b := r.buf[:4*n]
		r.full(b)
		for i := range xs[:n] {
			xs[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		xs = xs[n:]
	}
}

func (r *stateReader) u16s(xs []uint16) {
	for len(xs) > 0 {
		n := min(len(xs), len(r.buf)/2)
		b := r.buf[:2*n]
		r.full(b)
		for i := range xs[:n] {
			xs[i] = binary.LittleEndian.Uint16(b[2*i:])
		}
		xs = xs[n:]
	}
}

func (r *stateReader) skip(n int) {
	for n > 0 {
		k := min(n, len(r.buf))
		r.full(r.buf[:k])
		n -= k
	}
}
