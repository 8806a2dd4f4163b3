package servecli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"

	"github.com/wasmlm/wasmlm/httpapi"
)

// Access are serve's flags for who may use the API, and how much.
type Access struct {
	keys                 stringList
	keyFile              string
	allowUnauthenticated bool
	rateLimit            int
	tokenLimit           int
}

func (a *Access) Register(fs *flag.FlagSet) {
	fs.Var(&a.keys, "api-key", "an API key the API requires (Authorization: Bearer KEY); repeatable. Visible to other local users in the process list: prefer -api-key-file")
	fs.StringVar(&a.keyFile, "api-key-file", "", "a file of API keys, one per line (# comments); re-read on SIGHUP. Once given, the API requires a key, even when the file holds none")
	fs.BoolVar(&a.allowUnauthenticated, "allow-unauthenticated", false, "serve without a key on an address beyond loopback without the warning")
	fs.IntVar(&a.rateLimit, "rate-limit", 0, "requests per minute each key (without keys: each client address) may make (0: no limit)")
	fs.IntVar(&a.tokenLimit, "token-limit", 0, "tokens per minute each key (without keys: each client address) may use: a request reserves the most it can (prompt and max_tokens; embeddings' tokens) when admitted and gets back what it did not use (0: no limit)")
}

// Options builds the handler's key ring (nil: no key required) and limiter
// (nil: no limits) from the flags, reading the key file.
func (a *Access) Options() (*httpapi.KeyRing, httpapi.Limiter, error) {
	if a.rateLimit < 0 || a.tokenLimit < 0 {
		return nil, nil, errors.New("-rate-limit and -token-limit must be >= 0")
	}
	var limiter httpapi.Limiter
	if a.rateLimit > 0 || a.tokenLimit > 0 {
		var err error
		if limiter, err = httpapi.NewLimiter(httpapi.Limits{RequestsPerMinute: a.rateLimit, TokensPerMinute: a.tokenLimit}, nil); err != nil {
			return nil, nil, err
		}
	}
	if len(a.keys) == 0 && a.keyFile == "" {
		return nil, limiter, nil
	}
	keys, err := a.readKeys()
	if err != nil {
		return nil, nil, err
	}
	ring, err := httpapi.NewKeyRing(keys...)
	if err != nil {
		return nil, nil, err
	}
	return ring, limiter, nil
}

// readKeys returns the keys of -api-key and of -api-key-file.
func (a *Access) readKeys() ([]string, error) {
	keys := append([]string(nil), a.keys...)
	if a.keyFile == "" {
		return keys, nil
	}
	f, err := os.Open(a.keyFile)
	if err != nil {
		return nil, fmt.Errorf("-api-key-file: %w", err)
	}
	defer f.Close()
	more, err := httpapi.ReadKeys(f)
	if err != nil {
		return nil, fmt.Errorf("-api-key-file %s: %w", a.keyFile, err)
	}
	return append(keys, more...), nil
}

// ReloadKeysOnHangup handles SIGHUP until ctx ends with ReloadKeys: without
// a key file it only says there is none to re-read, rather than letting the
// signal end the server (its default) as a reload meant for it arrives.
func (a *Access) ReloadKeysOnHangup(ctx context.Context, ring *httpapi.KeyRing, log io.Writer) {
	if len(hangupSignals) == 0 {
		return
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, hangupSignals...)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
			}
			a.ReloadKeys(ring, log)
		}
	}()
}

// ReloadKeys re-reads the key file into ring, saying on log how many keys
// it now holds (a file it cannot read or parse leaves the keys as they
// were, and says why), or, without a key file, that there is none to
// re-read: what serve does on SIGHUP.
func (a *Access) ReloadKeys(ring *httpapi.KeyRing, log io.Writer) {
	if ring == nil || a.keyFile == "" {
		fmt.Fprintln(log, "serve: SIGHUP: no -api-key-file to re-read; nothing changed")
		return
	}
	keys, err := a.readKeys()
	if err == nil {
		err = ring.Set(keys)
	}
	if err != nil {
		fmt.Fprintf(log, "serve: SIGHUP: keeping the %s held: %v\n", plural(ring.Len(), "API key"), err)
		return
	}
	fmt.Fprintf(log, "serve: SIGHUP: %s (%d from -api-key, the rest from %s)\n", plural(ring.Len(), "API key"), len(a.keys), a.keyFile)
}

// plural is "n thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// Describe says, for serve's start-up line, who may use the API and how
// much.
func (a *Access) Describe(ring *httpapi.KeyRing) string {
	s := "no API key required"
	if ring != nil {
		s = plural(ring.Len(), "API key") + " accepted"
		if ring.Len() == 0 {
			s = "no API key accepted: every API request refused"
		}
	}
	if a.rateLimit > 0 {
		s += fmt.Sprintf(", %d requests/min", a.rateLimit)
	}
	if a.tokenLimit > 0 {
		s += fmt.Sprintf(", %d tokens/min", a.tokenLimit)
	}
	if a.rateLimit > 0 || a.tokenLimit > 0 {
		if ring != nil {
			s += " per key"
		} else {
			s += " per client address"
		}
	}
	return s
}

// WarnUnauthenticated says, unless -allow-unauthenticated, what it means
// to serve without keys on an address other machines can reach.
func (a *Access) WarnUnauthenticated(addr net.Addr, ring *httpapi.KeyRing, log io.Writer) {
	if ring != nil || a.allowUnauthenticated {
		return
	}
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		return
	}
	fmt.Fprintf(log, "serve: WARNING: listening on %s without an API key: anyone who can reach this address can use the model and its CPU. "+
		"Set -api-key-file (or -api-key), or -allow-unauthenticated to say this is meant.\n", addr)
}
