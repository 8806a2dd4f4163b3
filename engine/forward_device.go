package engine

// forwardDevice is forwardBlock on the session's Device: the same layer
// loop, each step the device's, in the same order; the embeddings are
// looked up here and written to the device, and only the logits (and, while
// a decoder embeds, the final states) are read back.
func (s *Session) forwardDevice(tokens []int, pos int, wantLogits bool) error {
	c, w, d := &s.model.config, s.model.weights, s.dev
	n, dim := len(tokens), c.Dim
	x := s.devX[:n*dim]
	for i, token := range tokens {
		w.TokenEmbedding.Row(row(x, i, dim), token)
	}
	c.scaleEmbedding(x)
	d.SetRows(VecX, x, n)
	headDim := c.HeadDim()
	var add pendingAdd // a sub-layer's output not yet added to VecX
	for l := range w.Layers {
		lw, spec := &w.Layers[l], c.Layer(l)

		// Attention (forwardBlock's steps, in its order).
		s.devPreNorm(spec.Norms, n, lw.AttnNorm, &add)
		d.Products(VecXN, n, DeviceProduct{VecQ, lw.Wq}, DeviceProduct{VecK, lw.Wk}, DeviceProduct{VecV, lw.Wv})
		if lw.Bq != nil {
			d.AddBias(VecQ, n, lw.Bq)
			d.AddBias(VecK, n, lw.Bk)
			d.AddBias(VecV, n, lw.Bv)
		}
		switch spec.QKNorm {
		case QKNormHeads:
			d.Norm(VecQ, VecQ, n, lw.QNorm, headDim, c.NormEps, false)
			d.Norm(VecK, VecK, n, lw.KNorm, headDim, c.NormEps, false)
		case QKNormAll:
			d.Norm(VecQ, VecQ, n, lw.QNorm, len(lw.QNorm), c.NormEps, false)
			d.Norm(VecK, VecK, n, lw.KNorm, len(lw.KNorm), c.NormEps, false)
		}
		if !spec.Attention.NoPE {
			d.RopeQK(n, pos, s.layerRopes[l].device(c.RopeStyle), headDim)
		}
		if spec.Attention.ScaleQueries {
			d.Scale(VecQ, n, spec.Attention.Scale)
		}
		d.Attention(l, n, pos, spec.Attention, c.scoreScale(spec.Attention))
		d.Products(VecAttn, n, DeviceProduct{VecProj, lw.Wo})
		add = s.devSublayerOut(&spec, n, VecProj, lw.AttnPostNorm)

		// Feed-forward.
		s.devPreNorm(spec.Norms, n, lw.FFNNorm, &add)
		d.Products(VecXN, n, DeviceProduct{VecGate, lw.WGate}, DeviceProduct{VecUp, lw.WUp})
		d.GateUnits(spec.FFN, n)
		d.Products(VecGate, n, DeviceProduct{VecDown, lw.WDown})
		add = s.devSublayerOut(&spec, n, VecDown, lw.FFNPostNorm)
	}
	if s.score != nil || (wantLogits && n == 1 && s.hidden == nil) {
		// The last sub-layer's output is added as the final norm runs.
		s.devPreNorm(NormsPre, n, w.OutputNorm, &add)
	} else {
		s.devAdd(&add, n)
	}
	if s.hidden != nil {
		for i := range n {
			if err := d.Read(VecX, i, row(x, i, dim)); err != nil {
				return err
			}
			s.hidden(row(x, i, dim))
		}
	}
	if s.score != nil {
		return s.devScore(tokens, pos) // VecXN holds the final norm
	}
	if !wantLogits {
		return d.Flush()
	}
	// The last token's logits: its final norm into VecXN's first row (a
	// copy of that row first, as the CPU normalises it in place).
	if n > 1 || s.hidden != nil {
		return s.devLogitsOfLast(tokens, pos)
	}
	return s.devLogits(tokens[n-1], pos+n-1) // VecXN holds the final norm
}

// devLogitsOfLast runs the classifier on the last of the tokens' rows: the block's
// final states are read back row n-1 only, written as row 0 of VecXN.
func (s *Session) devLogitsOfLast(tokens []int, pos int) error {
	c, w, d := &s.model.config, s.model.weights, s.dev
	n := len(tokens)
	last := s.devX[:c.Dim]
	if err := d.Read(VecX, n-1, last); err != nil {
		return err
	}
	d.SetRows(VecXN, last, 1)
	d.Norm(VecXN, VecXN, 1, w.OutputNorm, c.Dim, c.NormEps, false)
	return s.devLogits(tokens[n-1], pos+n-1)
}

// devLogits computes VecLogits from VecXN's first row and reads them into
// s.logits, scaled and capped as the model says; token at pos is the one
// a non-finite result names.
func (s *Session) devLogits(token, pos int) error {
	w, d := s.model.weights, s.dev
	d.Products(VecXN, 1, DeviceProduct{VecLogits, w.Output})
	if err := d.Read(VecLogits, 0, s.state.logits); err != nil {
		return err
	}
	s.logits = s.state.logits
	return s.finishLogits(s.logits, token, pos)
}

// devScore computes the next-token logits of every row of the block,
// reads them back at once and hands each to s.score, as scoreRows does.
func (s *Session) devScore(tokens []int, pos int) error {
	w, d := s.model.weights, s.dev
	n, vocab := len(tokens), w.Output.Rows
	d.Products(VecXN, n, DeviceProduct{VecLogits, w.Output})
	if len(s.devScores) < n*vocab {
		s.devScores = make([]float32, s.promptBlock*vocab)
	}
	all := s.devScores[:n*vocab]
	if err := d.Read(VecLogits, 0, all); err != nil {
		return err
	}
	for i := range n {
		logits := row(all, i, vocab)
		if err := s.finishLogits(logits, tokens[i], pos+i); err != nil {
			return err
		}
		if err := s.score(i, logits); err != nil {
			return err
		}
	}
	return nil
}

// pendingAdd is a sub-layer's output waiting to be added to the residual
// stream VecX: the device adds it as it normalises the next sub-layer's
// input (AddNorm), one dispatch instead of two.
type pendingAdd struct {
	vec Vec
	ok  bool
}

// devPreNorm sets VecXN to a sub-layer's input, as Config.preNorm does,
// adding add to VecX first.
func (s *Session) devPreNorm(norms Norms, n int, weight []float32, add *pendingAdd) {
	c := &s.model.config
	if !norms.pre() {
		s.devAdd(add, n)
		s.dev.Copy(VecXN, VecX, n)
		return
	}
	if add.ok {
		s.dev.AddNorm(VecXN, add.vec, n, weight, c.NormEps)
		add.ok = false
		return
	}
	s.dev.Norm(VecXN, VecX, n, weight, c.Dim, c.NormEps, false)
}

// devAdd adds add to VecX, if it waits.
func (s *Session) devAdd(add *pendingAdd, n int) {
	if add.ok {
		s.dev.Add(VecX, add.vec, n)
		add.ok = false
	}
}

// devSublayerOut finishes a sub-layer's output out as Config.addSublayer
// does (its post-norm, its residual scale) and returns it to be added to
// VecX.
func (s *Session) devSublayerOut(spec *LayerSpec, n int, out Vec, post []float32) pendingAdd {
	c := &s.model.config
	if spec.Norms.post() {
		s.dev.Norm(out, out, n, post, c.Dim, c.NormEps, true)
	}
	if spec.ResidualScale != 0 {
		s.dev.Scale(out, n, spec.ResidualScale)
	}
	return pendingAdd{vec: out, ok: true}
}

// newDeviceSession makes the device side of s, uploading the model's
// weights to the device the first time.
func (s *Session) newDeviceSession(dev Device) error {
	if err := s.model.DeviceSupports(); err != nil {
		return err
	}
	if err := dev.Upload(s.deviceWeights()); err != nil {
		return err
	}
	c, lw := &s.model.config, &s.model.weights.Layers[0]
	shape := DeviceShape{
		Block: s.promptBlock, Context: s.context, Layers: c.Layers, KV: s.kv.typ,
		Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadDim(), KVDim: lw.Wk.Rows,
		Slots: make([]int, c.Layers),
	}
	for l := range shape.Slots {
		shape.Slots[l] = s.context
		if window := c.Layer(l).Attention.Window; window > 0 {
			shape.Slots[l] = min(s.context, window+s.promptBlock-1)
		}
	}
	shape.Widths = [VecCount]int{
		VecX: c.Dim, VecXN: c.Dim, VecQ: lw.Wq.Rows, VecK: lw.Wk.Rows, VecV: lw.Wv.Rows,
		VecAttn: lw.Wq.Rows, VecProj: c.Dim, VecGate: lw.WGate.Rows, VecUp: lw.WUp.Rows,
		VecDown: lw.WDown.Rows, VecLogits: s.model.weights.Output.Rows,
	}
	ds, err := dev.NewSession(shape)
	if err != nil {
		return err
	}
	s.dev, s.devX = ds, make([]float32, s.promptBlock*c.Dim)
	return nil
}

// Device is the device the session's forward pass runs on, or nil for
// the CPU.
func (s *Session) Device() Device { return s.device }

// Close frees what the session holds outside Go's memory (its buffers on
// a Device); a closed session must not be used. Without a device it does
// nothing.
func (s *Session) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dev != nil {
		s.dev.Close()
		s.dev = nil
	}
}
