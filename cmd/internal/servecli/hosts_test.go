package servecli

import (
	"fmt"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHostPolicy: on a loopback address serve answers
// to loopback names and addresses only, beyond it to any address, and to
// the -allow-host names everywhere; "*" turns the check off.
func TestHostPolicy(t *testing.T) {
	policy := func(addr string, allowed ...string) func(string) bool {
		t.Helper()
		names, err := HostNames(allowed)
		require.NoError(t, err)
		tcp, err := net.ResolveTCPAddr("tcp", addr)
		require.NoError(t, err)
		return HostPolicy(tcp, names)
	}
	loopback := policy("127.0.0.1:8080")
	for _, name := range []string{"127.0.0.1", "127.0.0.2", "::1", "localhost", "app.localhost", ""} {
		assert.True(t, loopback(name), name)
	}
	for _, name := range []string{"10.0.0.5", "rebound.example", "localhost.rebound.example", "myhost.lan"} {
		assert.False(t, loopback(name), name)
	}
	assert.True(t, policy("[::1]:0", "MyHost.lan:8080")("myhost.lan"))

	anywhere := policy("0.0.0.0:8080", "myhost.lan")
	for _, name := range []string{"10.0.0.5", "192.168.1.2", "fe80::1", "127.0.0.1", "localhost", "myhost.lan"} {
		assert.True(t, anywhere(name), name)
	}
	assert.False(t, anywhere("rebound.example"))

	assert.Nil(t, policy("127.0.0.1:8080", "myhost.lan", "*"), `"*": no check`)
	for _, bad := range []string{"", "a b", "http://x/"} {
		_, err := HostNames([]string{bad})
		assert.Error(t, err, "%q", bad)
	}
}

// TestCORSOriginFlag: -cors takes "*" or an origin, written as browsers
// write the Origin header it is compared with, and refuses, naming why,
// what no browser sends as an origin.
func TestCORSOriginFlag(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"*", "*"},
		{"https://app.example", "https://app.example"},
		{"http://127.0.0.1:5173/", "http://127.0.0.1:5173"},
		{"HTTPS://App.Example:443/", "https://app.example"},
		{"http://LOCALHOST:80", "http://localhost"},
		{"https://app.example:80", "https://app.example:80"},
		{"http://app.example:443", "http://app.example:443"},
		{"https://app.example:08443", "https://app.example:8443"},
		{"https://app.example:", "https://app.example"},
		{"http://[0:0:0:0:0:0:0:1]:8080", "http://[::1]:8080"},
		{"http://[2001:DB8::A]", "http://[2001:db8::a]"},
		{"https://xn--bcher-kva.example", "https://xn--bcher-kva.example"},
		{"https://bücher.example", "https://bücher.example"}, // left as given: browsers send the xn-- form
	} {
		got, err := CORSOrigin(tc.in)
		if assert.NoError(t, err, tc.in) {
			assert.Equal(t, tc.want, got, tc.in)
		}
	}
	for _, tc := range []struct{ in, why string }{
		{"app.example", "does not start with http:// or https://"},
		{"localhost:5173", "does not start with http:// or https://"},
		{"ftp://app.example", "does not start with http:// or https://"},
		{"wss://app.example", "does not start with http:// or https://"},
		{"https:app.example", "does not start with http:// or https://"},
		{"https://", "has no host"},
		{"https:///page", "has no host"},
		{"https://:8443", "has no host"},
		{"https://app.example/page", "has a path (/page)"},
		{"https://app.example//", "has a path (//)"},
		{"https://app.example?x=1", "has a query"},
		{"https://app.example/?", "has a query"},
		{"https://app.example#top", "has a fragment"},
		{"https://app.example/#", "has a fragment"},
		{"https://user@app.example", "has user info"},
		{"https://user:pw@app.example", "has user info"},
		{"https://app.example:65536", "port 65536 is beyond 65535"},
		{"https://app.example:x", "invalid port"},
		{"http://[fe80::1%25eth0]", "has a %"},
		{"https://app example", "invalid character"},
		{"http://a.example,http://b.example", "not a list"},
	} {
		_, err := CORSOrigin(tc.in)
		if assert.Error(t, err, tc.in) {
			assert.Contains(t, err.Error(), tc.why, tc.in)
			assert.Contains(t, err.Error(), fmt.Sprintf("-cors %q", tc.in))
		}
	}
}

// TestModelName: the API's id of a model is its file's name without the
// extension or a split model's part number, of a URL its path's.
func TestModelName(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"", "default"},
		{"/models/stories260K-Q8_0.gguf", "stories260K-Q8_0"},
		{"/models/tinyllama-Q4_K-00001-of-00003.gguf", "tinyllama-Q4_K"},
		{"https://huggingface.co/o/r/resolve/main/qwen3-0.6b-q8_0.gguf?download=true", "qwen3-0.6b-q8_0"},
		{"hf:o/r/sub/qwen3-0.6b-q8_0.gguf@v1.0", "qwen3-0.6b-q8_0"},
	} {
		assert.Equal(t, tc.want, ModelName(tc.path, "default"), tc.path)
	}
}
