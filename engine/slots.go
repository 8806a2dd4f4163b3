package engine

import "github.com/wasmlm/wasmlm/engine/tensor"

// A slot names a field of modelWeights, or of each layer's layerWeights,
// that holds one tensor: an architecture's table says which tensor goes in
// which (tensorSpec.at), and matrixAt and vectorAt find the field. The
// matrices' slots come first, then the vectors'.
type slot uint8

const (
	// The model's matrices.
	slotTokenEmbedding slot = iota
	slotOutput
	slotPositionEmbedding
	slotTokenTypes
	slotCls
	slotClsOut
	// Each layer's matrices.
	slotWq
	slotWk
	slotWv
	slotWo
	slotWGate
	slotWUp
	slotWDown
	slotShortConv    // a short-convolution layer's kernel
	slotShortConvIn  // its in_proj: b, c and x
	slotShortConvOut // its out_proj
	slotSSMQKV       // a Gated DeltaNet layer's q, k and v projection
	slotSSMGate      // its output gate's projection
	slotSSMConv      // its convolution
	slotSSMBeta      // its β projection
	slotSSMAlpha     // its α projection
	slotSSMOut       // its output projection
	slotPerLayerTokenEmbedding
	slotPerLayerModelProj
	slotPerLayerGate
	slotPerLayerProj
	slotSSMIn // a Mamba-2 layer's input projection: z, x, B, C and dt
	// A mixture of experts' (moe.go).
	slotRouter
	slotWGateExps
	slotWUpExps
	slotWDownExps
	slotWGateShared
	slotWUpShared
	slotWDownShared
	// gpt-oss's experts' biases (moe_bias.go): a row per expert.
	slotBGateExps
	slotBUpExps
	slotBDownExps
	slotWGateUpExps // the experts' gate and up stacked in one tensor (gemma4)
	// gemma3n's (altup.go): the streams' projections, each layer's
	// router and coefficients, and its LAuReL branch.
	slotAltUpProj
	slotAltUpUnembdProj
	slotAltUpRouter
	slotAltUpPredict
	slotAltUpCorrect
	slotLaurelL
	slotLaurelR

	// The model's vectors.
	slotOutputNorm
	slotRopeFreqFactors
	slotRopeFactorsLong
	slotRopeFactorsShort
	slotEmbedNorm
	slotEmbedNormBias
	slotClsBias
	slotClsOutBias
	// Each layer's vectors.
	slotAttnNorm
	slotBq
	slotBk
	slotBv
	slotQNorm
	slotKNorm
	slotFFNNorm
	slotAttnPostNorm
	slotFFNPostNorm
	slotBo
	slotBUp
	slotBDown
	slotAttnOutNorm
	slotAttnOutNormBias
	slotLayerOutNorm
	slotLayerOutNormBias
	slotAttnSinks
	slotSSMDtBias // a Gated DeltaNet layer's dt bias
	slotSSMA      // its A = −exp(A_log)
	slotSSMNorm   // its output's RMSNorm weight
	slotPerLayerProjNorm
	slotPerLayerPostNorm
	slotOutScale
	slotSSMConvBias // a Mamba-2 layer's convolution bias
	slotSSMD        // its skip connection's weight (D)
	slotSharedGate
	slotRouterBias
	slotExpertBias // a router's selection bias (exp_probs_b: lfm2moe)
	// gemma4's mixtures of experts (moe_dense.go): the router's input
	// scale, the experts' output scales, the experts' own norms.
	slotRouterScale
	slotDownExpsScale
	slotFFNPreNorm2
	slotFFNPostNorm1
	slotFFNPostNorm2
	slotAltUpRouterNorm
	slotAltUpCorrectScale
	slotLaurelPostNorm
)

// firstVectorSlot is the first slot that holds a vector.
const firstVectorSlot = slotOutputNorm

// isMatrix reports whether the slot holds a matrix (else a vector).
func (s slot) isMatrix() bool { return s < firstVectorSlot }

// matrixAt is the field of w that slot s, a matrix's, names (in layer l
// for a layer's).
func (w *modelWeights) matrixAt(s slot, l int) **tensor.Matrix {
	switch s {
	case slotTokenEmbedding:
		return &w.TokenEmbedding
	case slotOutput:
		return &w.Output
	case slotPositionEmbedding:
		return &w.PositionEmbedding
	case slotTokenTypes:
		return &w.TokenTypes
	case slotCls:
		return &w.Cls
	case slotClsOut:
		return &w.ClsOut
	case slotPerLayerTokenEmbedding:
		return &w.PerLayerTokenEmbedding
	case slotPerLayerModelProj:
		return &w.PerLayerModelProj
	case slotAltUpProj:
		return &w.AltUpProj
	case slotAltUpUnembdProj:
		return &w.AltUpUnembdProj
	}
	lw := &w.Layers[l]
	switch s {
	case slotWq:
		return &lw.Wq
	case slotWk:
		return &lw.Wk
	case slotWv:
		return &lw.Wv
	case slotWo:
		return &lw.Wo
	case slotWGate:
		return &lw.WGate
	case slotWUp:
		return &lw.WUp
	case slotWDown:
		return &lw.WDown
	case slotShortConv:
		return &lw.ShortConv
	case slotShortConvIn:
		return &lw.ShortConvIn
	case slotShortConvOut:
		return &lw.ShortConvOut
	case slotSSMQKV:
		return &lw.SSMQKV
	case slotSSMGate:
		return &lw.SSMGate
	case slotSSMConv:
		return &lw.SSMConv
	case slotSSMBeta:
		return &lw.SSMBeta
	case slotSSMAlpha:
		return &lw.SSMAlpha
	case slotSSMIn:
		return &lw.SSMIn
	case slotSSMOut:
		return &lw.SSMOut
	case slotPerLayerGate:
		return &lw.PerLayerGate
	case slotPerLayerProj:
		return &lw.PerLayerProj
	case slotRouter:
		return &lw.Router
	case slotWGateExps:
		return &lw.WGateExps
	case slotWUpExps:
		return &lw.WUpExps
	case slotWDownExps:
		return &lw.WDownExps
	case slotWGateShared:
		return &lw.WGateShared
	case slotWUpShared:
		return &lw.WUpShared
	case slotWDownShared:
		return &lw.WDownShared
	case slotBGateExps:
		return &lw.BGateExps
	case slotBUpExps:
		return &lw.BUpExps
	case slotBDownExps:
		return &lw.BDownExps
	case slotWGateUpExps:
		return &lw.WGateUpExps
	case slotAltUpRouter:
		return &lw.AltUpRouter
	case slotAltUpPredict:
		return &lw.AltUpPredict
	case slotAltUpCorrect:
		return &lw.AltUpCorrect
	case slotLaurelL:
		return &lw.LaurelL
	case slotLaurelR:
		return &lw.LaurelR
	}
	return nil
}

// vectorAt is the field of w that slot s, a vector's, names (in layer l
// for a layer's).
func (w *modelWeights) vectorAt(s slot, l int) *[]float32 {
	switch s {
	case slotOutputNorm:
		return &w.OutputNorm
	case slotRopeFreqFactors:
		return &w.RopeFreqFactors
	case slotRopeFactorsLong:
		return &w.RopeFactorsLong
	case slotRopeFactorsShort:
		return &w.RopeFactorsShort
	case slotEmbedNorm:
		return &w.EmbedNorm
	case slotEmbedNormBias:
		return &w.EmbedNormBias
	case slotClsBias:
		return &w.ClsBias
	case slotClsOutBias:
		return &w.ClsOutBias
	case slotPerLayerProjNorm:
		return &w.PerLayerProjNorm
	}
	lw := &w.Layers[l]
	switch s {
	case slotAttnNorm:
		return &lw.AttnNorm
	case slotBq:
		return &lw.Bq
	case slotBk:
		return &lw.Bk
	case slotBv:
		return &lw.Bv
	case slotQNorm:
		return &lw.QNorm
	case slotKNorm:
		return &lw.KNorm
	case slotFFNNorm:
		return &lw.FFNNorm
	case slotAttnPostNorm:
		return &lw.AttnPostNorm
	case slotFFNPostNorm:
		return &lw.FFNPostNorm
	case slotBo:
		return &lw.Bo
	case slotBUp:
		return &lw.BUp
	case slotBDown:
		return &lw.BDown
	case slotAttnOutNorm:
		return &lw.AttnOutNorm
	case slotAttnOutNormBias:
		return &lw.AttnOutNormBias
	case slotLayerOutNorm:
		return &lw.LayerOutNorm
	case slotLayerOutNormBias:
		return &lw.LayerOutNormBias
	case slotAttnSinks:
		return &lw.Sinks
	case slotSSMConvBias:
		return &lw.SSMConvBias
	case slotSSMDtBias:
		return &lw.SSMDtBias
	case slotSSMA:
		return &lw.SSMA
	case slotSSMD:
		return &lw.SSMD
	case slotSSMNorm:
		return &lw.SSMNorm
	case slotPerLayerPostNorm:
		return &lw.PerLayerPostNorm
	case slotOutScale:
		return &lw.OutScale
	case slotSharedGate:
		return &lw.SharedGate
	case slotRouterBias:
		return &lw.RouterBias
	case slotExpertBias:
		return &lw.ExpertBias
	case slotRouterScale:
		return &lw.RouterScale
	case slotDownExpsScale:
		return &lw.DownExpsScale
	case slotFFNPreNorm2:
		return &lw.FFNPreNorm2
	case slotFFNPostNorm1:
		return &lw.FFNPostNorm1
	case slotFFNPostNorm2:
		return &lw.FFNPostNorm2
	case slotAltUpRouterNorm:
		return &lw.AltUpRouterNorm
	case slotAltUpCorrectScale:
		return &lw.AltUpCorrectScale
	case slotLaurelPostNorm:
		return &lw.LaurelPostNorm
	}
	return nil
}
