package httpapi

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
)

// KeyRing is the set of API keys a Handler accepts (Options.Keys). It is
// safe for concurrent use, and Set replaces the keys while requests are
// served (wasmlm serve re-reads its key file on SIGHUP). A KeyRing with no
// keys accepts none: a server configured with keys stays closed when the
// last one is revoked, rather than opening to everyone.
type KeyRing struct {
	keys atomic.Pointer[[]keyHash]
}

// keyHash is a key's SHA-256: keys are compared as hashes, which have one
// length, so the comparison's time depends on neither the key presented
// nor the keys held.
type keyHash [sha256.Size]byte

// NewKeyRing returns a KeyRing holding keys (see Set).
func NewKeyRing(keys ...string) (*KeyRing, error) {
	k := &KeyRing{}
	if err := k.Set(keys); err != nil {
		return nil, err
	}
	return k, nil
}

// Set replaces the keys. A key must be non-empty printable ASCII without
// spaces (what an Authorization header can carry); otherwise Set fails and
// keeps the keys it had.
func (k *KeyRing) Set(keys []string) error {
	hashes := make([]keyHash, 0, len(keys))
	for i, key := range keys {
		if err := checkKey(key); err != nil {
			return fmt.Errorf("%w: API key %d: %v", ErrInvalidOptions, i+1, err)
		}
		hashes = append(hashes, sha256.Sum256([]byte(key)))
	}
	k.keys.Store(&hashes)
	return nil
}

// Len is the number of keys held.
func (k *KeyRing) Len() int {
	if p := k.keys.Load(); p != nil {
		return len(*p)
	}
	return 0
}

// checkKey says what makes key unusable in an Authorization header.
func checkKey(key string) error {
	if key == "" {
		return fmt.Errorf("empty")
	}
	for _, c := range []byte(key) {
		if c <= ' ' || c >= 0x7f {
			return fmt.Errorf("only printable ASCII without spaces can be sent in a header")
		}
	}
	return nil
}

// match reports whether key is one of the keys held, and returns the
// client name the limits count it under (a digest of the key, never the key
// itself). Every held key is compared, in constant time, whichever matches.
func (k *KeyRing) match(key string) (client string, ok bool) {
	p := k.keys.Load()
	if p == nil || key == "" {
		return "", false
	}
	h := sha256.Sum256([]byte(key))
	found := 0
	for i := range *p {
		found |= subtle.ConstantTimeCompare(h[:], (*p)[i][:])
	}
	if found == 0 {
		return "", false
	}
	return "key:" + hex.EncodeToString(h[:8]), true
}

// ReadKeys reads API keys from a key file: one key per line; blank lines
// and lines that begin with # are skipped, spaces around a key trimmed.
func ReadKeys(r io.Reader) ([]string, error) {
	var keys []string
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		key := strings.TrimSpace(sc.Text())
		if key == "" || strings.HasPrefix(key, "#") {
			continue
		}
		if err := checkKey(key); err != nil {
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
		keys = append(keys, key)
	}
	return keys, sc.Err()
}

// presentedKey is the API key a request carries: "Authorization: Bearer
// KEY" (what OpenAI's clients send), else "x-api-key: KEY".
func presentedKey(r *http.Request) string {
	if auth := r.Header.Get("Authorization"); auth != "" {
		scheme, key, _ := strings.Cut(strings.TrimSpace(auth), " ")
		if strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(key)
		}
		return ""
	}
	return strings.TrimSpace(r.Header.Get("X-Api-Key"))
}

// authenticate checks r's key when the handler has keys, and returns the
// client the limits count r under: the key's name, or, without keys, the
// client's address.
func (h *Handler) authenticate(r *http.Request) (client string, e *apiError) {
	if h.opts.Keys == nil {
		return "addr:" + remoteHost(r), nil
	}
	key := presentedKey(r)
	client, ok := h.opts.Keys.match(key)
	if ok {
		return client, nil
	}
	msg := "You didn't provide an API key. Send it as \"Authorization: Bearer KEY\" (or \"x-api-key: KEY\")."
	if key != "" {
		msg = "Incorrect API key provided."
	}
	return "", &apiError{
		status: http.StatusUnauthorized, typ: typeInvalidRequest, code: "invalid_api_key", message: msg,
		header: http.Header{"Www-Authenticate": {`Bearer realm="wasmlm"`}},
	}
}

// remoteHost is the host part of r's remote address: net/http's
// "host:port", or a bare address as some hosts give (syumai/workers gives
// the CF-Connecting-IP header's, an IPv6 one without brackets).
func remoteHost(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return strings.Trim(r.RemoteAddr, "[]")
}
