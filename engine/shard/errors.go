package shard

import "github.com/wasmlm/wasmlm/engine"

// Sentinel errors; functions wrap them with %w and say what was wrong. Their
// codes (engine.CodeOf, policy.CodeOf) are invalid_argument, invalid_model and
// exchange_failed.
var (
	// ErrSplit means a model cannot be split as asked, or a part is used in
	// a way its role does not allow (a follower asked to generate).
	ErrSplit = engine.NewError(engine.CodeInvalidArgument, "shard: cannot split")
	// ErrMismatch means the shards connected as a group are not the parts
	// of one model for one split and one context length.
	ErrMismatch = engine.NewError(engine.CodeInvalidModel, "shard: the shards do not match")
	// ErrExchange means the shards could not exchange activations: a
	// message was lost, a shard failed mid-step, or the shards fell out of
	// step.
	ErrExchange = engine.NewError(engine.CodeExchangeFailed, "shard: exchange between shards failed")
)
