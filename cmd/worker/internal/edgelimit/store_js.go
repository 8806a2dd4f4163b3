package edgelimit

import (
	"strconv"
	"strings"
	"syscall/js"
	"time"

	"github.com/wasmlm/wasmlm/httpapi"
)

// Store is an httpapi.LimitStore held in a JavaScript Map on globalThis,
// shared by every Go program the isolate runs. Each client's Usage is a
// string, "requests tokens at" (at: Unix nanoseconds), so that a Load or a
// Store is one call into JavaScript and a Sweep a few, whatever the number
// of clients. Sweep must be cheap: the limiter of each request's fresh Go
// program sweeps once the isolate holds 1024 clients still within their
// minute (the threshold it doubles then is forgotten with the program).
// Reading each client through calls of its own took 5 µs a client (10–14
// ms a sweep of 2000); read this way a sweep of 2000 takes 1–2 ms, of 8000
// 4–7 (BenchmarkAllow, under Node).
//
// Its Limiter serialises its calls within one Go program; across the Go
// programs of an isolate none is needed, because JavaScript runs one thing
// at a time and a Limiter's Load and Store are synchronous calls between
// which the Go program does not give the isolate back.
type Store struct {
	m js.Value // the Map: client → "requests tokens at"
}

var _ httpapi.LimitStore = (*Store)(nil)

// NewStore returns the Store kept in globalThis[global], creating the Map
// when this is the isolate's first.
func NewStore(global string) *Store {
	m := js.Global().Get(global)
	if m.IsUndefined() {
		m = js.Global().Get("Map").New()
		js.Global().Set(global, m)
	}
	return &Store{m: m}
}

// Load returns client's usage, if held.
func (s *Store) Load(client string) (httpapi.Usage, bool) {
	v := s.m.Call("get", client)
	if v.Type() != js.TypeString {
		return httpapi.Usage{}, false
	}
	return parseUsage(v.String())
}

// Store holds u as client's usage.
func (s *Store) Store(client string, u httpapi.Usage) {
	s.m.Call("set", client, formatUsage(u))
}

// Sweep deletes the clients for which drop reports true. It reads every
// usage in one string (the Map's values joined by newlines, which no usage
// holds) and fetches only the names of the clients it deletes.
func (s *Store) Sweep(drop func(httpapi.Usage) bool) {
	array := js.Global().Get("Array")
	values := array.Call("from", s.m.Call("values")).Call("join", "\n").String()
	var keys js.Value // in the same order: a Map iterates in insertion order
	for i, text := range strings.Split(values, "\n") {
		u, ok := parseUsage(text)
		if ok && !drop(u) {
			continue
		}
		if keys.IsUndefined() {
			keys = array.Call("from", s.m.Call("keys"))
		}
		s.m.Call("delete", keys.Index(i))
	}
}

// Len is the number of clients held.
func (s *Store) Len() int { return s.m.Get("size").Int() }

func formatUsage(u httpapi.Usage) string {
	return strconv.FormatFloat(u.Requests, 'g', -1, 64) + " " + strconv.FormatFloat(u.Tokens, 'g', -1, 64) + " " + strconv.FormatInt(u.At.UnixNano(), 10)
}

// parseUsage reads formatUsage's text; what it cannot read is not a usage.
func parseUsage(text string) (httpapi.Usage, bool) {
	requests, rest, _ := strings.Cut(text, " ")
	tokens, at, _ := strings.Cut(rest, " ")
	r, err1 := strconv.ParseFloat(requests, 64)
	t, err2 := strconv.ParseFloat(tokens, 64)
	ns, err3 := strconv.ParseInt(at, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return httpapi.Usage{}, false
	}
	return httpapi.Usage{Requests: r, Tokens: t, At: time.Unix(0, ns)}, true
}
