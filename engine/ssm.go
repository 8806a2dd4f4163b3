package engine

import "fmt"

// SSMShape is the shape of a hybrid model's recurrent layers, as GGUF's
// "<arch>.ssm.*" keys say it (llama.cpp's ssm_d_conv, ssm_d_inner,
// ssm_d_state, ssm_dt_rank, ssm_n_group). Qwen3.5's Gated DeltaNet layers
// (deltanet.go) read them as: a convolution of ConvKernel positions over
// the queries, keys and values; GroupCount query and key heads and
// TimeStepRank value heads, each StateSize wide; InnerSize =
// TimeStepRank·StateSize, the values' width. The zero value: a model
// without such layers.
type SSMShape struct {
	ConvKernel   int `json:"conv_kernel,omitempty"`    // ssm.conv_kernel: positions a causal convolution spans
	InnerSize    int `json:"inner_size,omitempty"`     // ssm.inner_size
	StateSize    int `json:"state_size,omitempty"`     // ssm.state_size
	TimeStepRank int `json:"time_step_rank,omitempty"` // ssm.time_step_rank
	GroupCount   int `json:"group_count,omitempty"`    // ssm.group_count
}

// ssmKeys are the ssm.* hyper-parameters, all required.
var ssmKeys = []configKey{
	{key: "ssm.conv_kernel", int: func(p *hyperParams) *int { return &p.SSM.ConvKernel }},
	{key: "ssm.inner_size", int: func(p *hyperParams) *int { return &p.SSM.InnerSize }},
	{key: "ssm.state_size", int: func(p *hyperParams) *int { return &p.SSM.StateSize }},
	{key: "ssm.time_step_rank", int: func(p *hyperParams) *int { return &p.SSM.TimeStepRank }},
	{key: "ssm.group_count", int: func(p *hyperParams) *int { return &p.SSM.GroupCount }},
}

// validate checks that every size is in range (each at least 1).
func (s SSMShape) validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"ssm.conv_kernel", s.ConvKernel}, {"ssm.inner_size", s.InnerSize}, {"ssm.state_size", s.StateSize},
		{"ssm.time_step_rank", s.TimeStepRank}, {"ssm.group_count", s.GroupCount}} {
		if f.v <= 0 || f.v > maxDimension {
			return fmt.Errorf("%w: %s = %d is out of range (1..%d)", ErrFormat, f.name, f.v, maxDimension)
		}
	}
	return nil
}
