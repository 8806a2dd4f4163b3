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
	for l := range w.Layers {
		lw, spec := &w.Layers[l], c.Layer(l)

		// Attention (forwardBlock's steps, in its order).
		s.devPreNorm(spec.Norms, n, lw.AttnNorm)
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
			rope := s.layerRopes[l].device(c.RopeStyle)
			d.Rope(VecQ, n, pos, rope, headDim)
			d.Rope(VecK, n, pos, rope, headDim)
		}
		if spec.Attention.ScaleQueries {
			d.Scale(VecQ, n, spec.Attention.Scale)
		}
		d.Attention(l, n, pos, spec.Attention, c.scoreScale(spec.Attention))
		d.Products(VecAttn, n, DeviceProduct{VecProj, lw.Wo})
		s.devAddSublayer(&spec, n, VecProj, lw.AttnPostNorm)

		// Feed-forward.
		s.devPreNorm(spec.Norms, n, lw.FFNNorm)
		d.Products(VecXN, n, DeviceProduct{VecGate, lw.WGate}, DeviceProduct{VecUp, lw.WUp})
		d.GateUnits(spec.FFN, n)
		d.Products(VecGate, n, DeviceProduct{VecDown, lw.WDown})
		s.devAddSublayer(&spec, n, VecDown, lw.FFNPostNorm)
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
		return s.devScore(tokens, pos)
	}
	if !wantLogits {
		return d.Flush()
	}
	// The last token's logits: its final norm into VecXN's first row (a
	// copy of that row first, as the CPU normalises it in place).
	if n > 1 {
		return s.devLogitsOfLast(n, pos)
	}
	d.Norm(VecXN, VecX, 1, w.OutputNorm, dim, c.NormEps, false)
	return s.devLogits(tokens[n-1], pos+n-1)
}

// devLogitsOfLast runs the classifier on the last of n rows: the block's
// final states are read back row n-1 only, written as row 0 of VecXN.
func (s *Session) devLogitsOfLast(n, pos int) error {
	c, w, d := &s.model.config, s.model.weights, s.dev
	last := s.devX[:c.Dim]
	if err := d.Read(VecX, n-1, last); err != nil {
		return err
	}
	d.SetRows(VecXN, last, 1)
	d.Norm(VecXN, VecXN, 1, w.OutputNorm, c.Dim, c.NormEps, false)
	return s.devLogits(-1, pos+n-1)
}

// devLogits computes VecLogits from VecXN's first row and reads them into
// s.logits, scaled and capped as the model says; token (or -1) at pos is
// the one a non-finite result names.
func (s *Session) devLogits(token, pos int) error {
	c, w, d := &s.model.config, s.model.weights, s.dev
	d.Products(VecXN, 1, DeviceProduct{VecLogits, w.Output})
	if err := d.Read(VecLogits, 0, s.state.logits); err != nil {
		return err
	}
	s.logits = s.state.logits
	c.scaleLogits(s.logits)
	c.capLogits(s.logits)
	var g finiteGuard
	if g.check(s.logits, guardLogits, 0); g.what != "" {
		return g.err(s.model, max(token, 0), pos)
	}
	return nil
}

// devScore computes the next-token logits of every row of the block,
// reads them back at once and hands each to s.score, as scoreRows does.
func (s *Session) devScore(tokens []int, pos int) error {
	c, w, d := &s.model.config, s.model.weights, s.dev
	n, vocab := len(tokens), w.Output.Rows
	d.Norm(VecXN, VecX, n, w.OutputNorm, c.Dim, c.NormEps, false)
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
		c.scaleLogits(logits)
		c.capLogits(logits)
		var g finiteGuard
		if g.check(logits, guardLogits, 0); g.what != "" {
			return g.err(s.model, tokens[i], pos+i)
		}
		if err := s.score(i, logits); err != nil {
			return err
		}
	}
	return nil
}

// devPreNorm sets VecXN to a sub-layer's input, as Config.preNorm does.
func (s *Session) devPreNorm(norms Norms, n int, weight []float32) {
	c := &s.model.config
	if !norms.pre() {
		s.dev.Copy(VecXN, VecX, n)
		return
	}
	s.dev.Norm(VecXN, VecX, n, weight, c.Dim, c.NormEps, false)
}

// devAddSublayer adds the sub-layer's output out to VecX, as
// Config.addSublayer does.
func (s *Session) devAddSublayer(spec *LayerSpec, n int, out Vec, post []float32) {
	c := &s.model.config
	if spec.Norms.post() {
		s.dev.Norm(out, out, n, post, c.Dim, c.NormEps, true)
	}
	if spec.ResidualScale != 0 {
		s.dev.Scale(out, n, spec.ResidualScale)
	}
	s.dev.Add(VecX, out, n)
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
