//go:build !js

package servecli

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/httpapi"
)

// TestAccessFlags: the key and limit flags make the handler's
// key ring and limiter; a key file the server cannot use is a usage error
// naming the file and the line, never a server that opens up.
func TestAccessFlags(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
		return p
	}
	good := write("good", "# keys\nsk-file-1\n\nsk-file-2\n")
	empty := write("empty", "# every key revoked\n")
	bad := write("bad", "sk-ok\nsk bad\n")
	for _, tc := range []struct {
		name     string
		flags    Access
		keys     int // -1: no key ring
		limiter  bool
		errMatch string
	}{
		{"nothing", Access{}, -1, false, ""},
		{"limits without keys", Access{rateLimit: 10}, -1, true, ""},
		{"a token limit", Access{tokenLimit: 1000}, -1, true, ""},
		{"keys on the command line", Access{keys: stringList{"sk-a", "sk-b"}}, 2, false, ""},
		{"a key file and a key", Access{keys: stringList{"sk-a"}, keyFile: good, rateLimit: 1}, 3, true, ""},
		{"an empty key file still requires a key", Access{keyFile: empty}, 0, false, ""},
		{"a missing key file", Access{keyFile: filepath.Join(dir, "none")}, 0, false, "-api-key-file: open"},
		{"a bad line", Access{keyFile: bad}, 0, false, "bad: line 2"},
		{"a bad key", Access{keys: stringList{"sk a"}}, 0, false, "API key 1"},
		{"a negative limit", Access{rateLimit: -1}, 0, false, "-rate-limit and -token-limit must be >= 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ring, limiter, err := tc.flags.Options()
			if tc.errMatch != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.errMatch)
				return
			}
			require.NoError(t, err)
			if tc.keys < 0 {
				assert.Nil(t, ring)
			} else if assert.NotNil(t, ring) {
				assert.Equal(t, tc.keys, ring.Len())
			}
			assert.Equal(t, tc.limiter, limiter != nil)
		})
	}
}

// TestWarnUnauthenticated: serving without keys on an address beyond
// loopback says so, unless keys are set or -allow-unauthenticated is.
func TestWarnUnauthenticated(t *testing.T) {
	ring, err := httpapi.NewKeyRing("sk-a")
	require.NoError(t, err)
	for _, tc := range []struct {
		addr  string
		ring  *httpapi.KeyRing
		allow bool
		warn  bool
	}{
		{"127.0.0.1:8080", nil, false, false},
		{"[::1]:8080", nil, false, false},
		{"0.0.0.0:8080", nil, false, true},
		{"[::]:8080", nil, false, true},
		{"192.0.2.10:8080", nil, false, true},
		{"0.0.0.0:8080", ring, false, false},
		{"0.0.0.0:8080", nil, true, false},
	} {
		addr, err := net.ResolveTCPAddr("tcp", tc.addr)
		require.NoError(t, err)
		var log bytes.Buffer
		(&Access{allowUnauthenticated: tc.allow}).WarnUnauthenticated(addr, tc.ring, &log)
		if tc.warn {
			assert.Contains(t, log.String(), "WARNING: listening on "+addr.String()+" without an API key", tc.addr)
		} else {
			assert.Empty(t, log.String(), "%s, keys %v, allowed %v", tc.addr, tc.ring != nil, tc.allow)
		}
	}
}

// TestAccessDescribed: serve's start-up line says whether keys are needed
// and what the limits are.
func TestAccessDescribed(t *testing.T) {
	none, err := httpapi.NewKeyRing()
	require.NoError(t, err)
	two, err := httpapi.NewKeyRing("sk-a", "sk-b")
	require.NoError(t, err)
	for _, tc := range []struct {
		flags Access
		ring  *httpapi.KeyRing
		want  string
	}{
		{Access{}, nil, "no API key required"},
		{Access{rateLimit: 60}, nil, "no API key required, 60 requests/min per client address"},
		{Access{tokenLimit: 1000}, two, "2 API keys accepted, 1000 tokens/min per key"},
		{Access{}, none, "no API key accepted: every API request refused"},
	} {
		assert.Equal(t, tc.want, tc.flags.Describe(tc.ring))
	}
}
