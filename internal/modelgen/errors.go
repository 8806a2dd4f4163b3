package modelgen

import "errors"

// ErrSpec means a Spec cannot be built: a shape that is not a transformer
// (zero or indivisible sizes), a tensor type without a quantizer, or a
// vocabulary too small for the synthetic tokenizer.
var ErrSpec = errors.New("modelgen: invalid spec")
