package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/wasmlm/wasmlm/httpapi"
)

// The names the worker reads from its environment (Cloudflare's env: the
// secret and the variables of wrangler.toml, bindings in workerd).
const (
	envKeys        = "WASMLM_API_KEYS"          // secret: API keys, comma-separated
	envRateLimit   = "WASMLM_RATE_LIMIT"        // requests per minute per client
	envTokenLimit  = "WASMLM_TOKEN_LIMIT"       // tokens per minute per client
	envMaxTokens   = "WASMLM_MAX_TOKENS"        // cap on a request's max_tokens
	envMaxEmbed    = "WASMLM_MAX_EMBED_TOKENS"  // cap on an embeddings or rerank request's tokens
	envLimiter     = "WASMLM_RATE_LIMITER"      // Cloudflare's Rate Limiting binding
	envLimitPeriod = "WASMLM_RATE_LIMIT_PERIOD" // that binding's period, in seconds
	envShift       = "WASMLM_CONTEXT_SHIFT"     // context_shift's default: true or false
)

// defaultLimitPeriod is WASMLM_RATE_LIMIT_PERIOD when unset: Cloudflare's
// longer period (it allows 10 or 60 seconds).
const defaultLimitPeriod = 60 * time.Second

// edgeConfig is what the worker's environment asks of it.
type edgeConfig struct {
	keys      []string       // none: every request is served, as without the secret
	limits    httpapi.Limits // per client, counted in the isolate
	maxTokens int            // 0: the context
	maxEmbed  int            // 0: no cap (unset: httpapi.DefaultMaxEmbedTokens)
	period    time.Duration  // the Rate Limiting binding's period: a refusal's Retry-After
	shift     bool           // context_shift's default (httpapi.Options.ContextShift)
}

// errMisconfigured wraps every error of readConfig.
var errMisconfigured = errors.New("the worker is misconfigured")

// readConfig reads the worker's configuration through getenv, which returns
// a variable's text ("" when unset). An error names the variable and never
// quotes the secret.
func readConfig(getenv func(name string) (string, error)) (edgeConfig, error) {
	var c edgeConfig
	secret, err := getenv(envKeys)
	if err != nil {
		return c, fmt.Errorf("%w: %v", errMisconfigured, err)
	}
	if c.keys, err = splitKeys(secret); err != nil {
		return c, fmt.Errorf("%w: the secret %s is malformed: %v", errMisconfigured, envKeys, err)
	}
	for _, n := range []struct {
		name string
		to   *int
		what string
	}{
		{envRateLimit, &c.limits.RequestsPerMinute, "requests per minute"},
		{envTokenLimit, &c.limits.TokensPerMinute, "tokens per minute"},
		{envMaxTokens, &c.maxTokens, "tokens"},
	} {
		if *n.to, err = readCount(getenv, n.name, n.what, 0); err != nil {
			return c, err
		}
	}
	if c.maxEmbed, err = readCount(getenv, envMaxEmbed, "tokens", httpapi.DefaultMaxEmbedTokens); err != nil {
		return c, err
	}
	seconds, err := readCount(getenv, envLimitPeriod, "seconds", int(defaultLimitPeriod/time.Second))
	if err != nil {
		return c, err
	}
	if seconds == 0 {
		return c, fmt.Errorf("%w: %s = 0: the period is at least a second", errMisconfigured, envLimitPeriod)
	}
	c.period = time.Duration(seconds) * time.Second
	text, err := getenv(envShift)
	if err != nil {
		return c, fmt.Errorf("%w: %v", errMisconfigured, err)
	}
	switch strings.TrimSpace(text) {
	case "", "false", "0":
	case "true", "1":
		c.shift = true
	default:
		return c, fmt.Errorf("%w: %s = %q: not true or false", errMisconfigured, envShift, text)
	}
	return c, nil
}

// readCount reads a variable holding a whole number >= 0 (0: no limit), or
// def when it is unset or empty.
func readCount(getenv func(string) (string, error), name, what string, def int) (int, error) {
	text, err := getenv(name)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", errMisconfigured, err)
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return def, nil
	}
	n, err := strconv.Atoi(text)
	if err != nil || n < 0 || n > 1<<30 {
		return 0, fmt.Errorf("%w: %s = %q: not a number of %s (a whole number from 0, no limit, to %d)", errMisconfigured, name, text, what, 1<<30)
	}
	return n, nil
}

// splitKeys parses the keys secret: keys separated by commas, with spaces
// around each trimmed and empty entries skipped. An empty secret holds no
// keys (the API stays open); one that is not empty must hold at least one,
// each usable in an Authorization header. Errors number the key, never
// quote it.
func splitKeys(secret string) ([]string, error) {
	if strings.TrimSpace(secret) == "" {
		return nil, nil
	}
	var keys []string
	for entry := range strings.SplitSeq(secret, ",") {
		key := strings.TrimSpace(entry)
		if key == "" {
			continue
		}
		keys = append(keys, key)
		if _, err := httpapi.NewKeyRing(key); err != nil {
			return nil, fmt.Errorf("key %d is not printable ASCII without spaces (what an Authorization header carries)", len(keys))
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("it holds commas but no key")
	}
	return keys, nil
}

// maxTokensFor is the cap on a request's max_tokens the worker serves a
// model with (httpapi.Options.MaxTokens; 0: none but the context), given the
// variable's cap and the context the budget fitted: the variable's, but
// never beyond the context unless the context shifts (then a reply may
// run past it). A model that does not generate (embeddings, reranking)
// takes no max_tokens, so the variable does not apply to it. notice,
// when the cap was lowered, says so for the log and GET /health.
func maxTokensFor(cfg edgeConfig, generates bool, context int) (limit int, notice string) {
	switch {
	case !generates:
		return 0, ""
	case cfg.maxTokens > context && !cfg.shift:
		return context, fmt.Sprintf("%s = %d exceeds the context of %d tokens the model is served with: max_tokens is capped at %d (%s=true lets a reply run past the context)",
			envMaxTokens, cfg.maxTokens, context, context, envShift)
	}
	return cfg.maxTokens, ""
}
