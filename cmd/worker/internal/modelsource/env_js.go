package modelsource

import (
	"context"
	"encoding/hex"
	"net/url"
	"strings"
	"syscall/js"

	"github.com/wasmlm/wasmlm/engine"
)

// The names the worker reads its model's source from.
const (
	EnvModel      = "WASMLM_MODEL"        // a key of the bucket bound as BucketBinding
	EnvURL        = "WASMLM_MODEL_URL"    // an http(s) URL, or a path of the assets bound as AssetsBinding
	EnvSHA256     = "WASMLM_MODEL_SHA256" // the file's SHA-256, or each part's, comma-separated
	BucketBinding = "MODEL_BUCKET"        // the R2 bucket binding ([[r2_buckets]])
	AssetsBinding = "ASSETS"              // the static-assets binding ([assets] binding)
)

// FromEnv loads the model the worker's environment names (see the package
// doc) and returns it with the name it is served under; ok is false, with
// no error, when the environment names none (the worker then serves its
// embedded default). getenv reads a variable as text ("" when unset),
// binding returns a binding (undefined when unbound). session is the
// context and KV type of the session the worker will serve with (its
// zero value: the model's context, at most engine.DefaultContextLength,
// and KVAuto), whose KV cache the budget counts. Errors are *Error.
func FromEnv(getenv func(string) (string, error), binding func(string) js.Value, session engine.SessionOptions) (m *engine.Model, name string, ok bool, err error) {
	key, err := variable(getenv, EnvModel)
	if err != nil {
		return nil, "", false, err
	}
	u, err := variable(getenv, EnvURL)
	if err != nil {
		return nil, "", false, err
	}
	sums, err := variable(getenv, EnvSHA256)
	if err != nil {
		return nil, "", false, err
	}
	opts := Options{ContextLength: session.ContextLength, KVType: session.KVType}
	for s := range strings.FieldsFuncSeq(sums, func(r rune) bool { return r == ',' || r == ' ' }) {
		if b, err := hex.DecodeString(s); err != nil || len(b) != 32 {
			return nil, "", false, fail(CodeMisconfigured, "%s holds %q, not a SHA-256 digest (64 hexadecimal digits; a split set's, one per part, comma-separated)", EnvSHA256, s)
		}
		opts.SHA256 = append(opts.SHA256, s)
	}
	var store Store
	switch {
	case key != "":
		bucket := binding(BucketBinding)
		if isNullish(bucket) {
			return nil, "", false, fail(CodeMisconfigured, "%s names an object of the R2 bucket bound as %s, and the worker has no such binding ([[r2_buckets]] binding = %q in wrangler.toml)", EnvModel, BucketBinding, BucketBinding)
		}
		store, name = NewR2(bucket, BucketBinding), key
	case u != "":
		var f *Fetch
		if f, name, err = urlStore(u, binding); err != nil {
			return nil, "", false, err
		}
		defer f.Forget()
		store = f
	default:
		if len(opts.SHA256) > 0 {
			return nil, "", false, fail(CodeMisconfigured, "%s is set without %s or %s: it checks the model they name", EnvSHA256, EnvModel, EnvURL)
		}
		return nil, "", false, nil
	}
	m, err = Load(context.Background(), store, name, opts)
	if err != nil {
		return nil, "", false, err
	}
	return m, ServedName(name), true, nil
}

// urlStore is the Store of WASMLM_MODEL_URL and the name to load from it:
// an http(s) URL through fetch, or a path ("/models/m.gguf") of the
// static assets bound as ASSETS.
func urlStore(u string, binding func(string) js.Value) (*Fetch, string, error) {
	if strings.HasPrefix(u, "/") {
		assets := binding(AssetsBinding)
		if isNullish(assets) {
			return nil, "", fail(CodeMisconfigured, "%s is a path, %q, which names a static asset, and the worker has no assets bound as %s ([assets] binding = %q)", EnvURL, u, AssetsBinding, AssetsBinding)
		}
		// An assets binding's fetch goes by the path; the host is a placeholder.
		return NewAssets(assets, AssetsBinding), "https://assets.invalid" + u, nil
	}
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return nil, "", fail(CodeMisconfigured, "%s = %q is not an http(s) URL or a path of the static assets", EnvURL, safeURL(u))
	}
	return NewFetch(), u, nil
}

// variable reads a variable as trimmed text; reading it failing is
// CodeMisconfigured.
func variable(getenv func(string) (string, error), name string) (string, error) {
	v, err := getenv(name)
	if err != nil {
		return "", fail(CodeMisconfigured, "%s: %w", name, err)
	}
	return strings.TrimSpace(v), nil
}
