package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/openai"
)

// eventStream writes one completion as Server-Sent Events: the chunks of
// an openai.Stream, in OpenAI's order, then "data: [DONE]". Every event is
// written in one Write and flushed at once, so a client (or the edge
// worker's stream) sees each token as it comes.
type eventStream struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	chunks *openai.Stream
	// events, for /v1/responses, stands in for chunks: the Responses
	// API's typed events, each named by its type, and no [DONE].
	events  *openai.ResponseStream
	started bool
	sent    int   // chunks written (not [DONE], not an error event)
	err     error // the first write error: the client is gone
}

// start sends the headers, and the chunks before the first token (a chat's
// role chunk).
func (s *eventStream) start() error {
	if s.started {
		return s.err
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // tell reverse proxies not to buffer the stream
	s.w.WriteHeader(http.StatusOK)
	if s.events != nil {
		return s.sendEvents(s.events.Start())
	}
	first := s.chunks.Start()
	if len(first) == 0 {
		s.flush()
		return s.err
	}
	return s.sendAll(first)
}

// token sends the chunks of a token's text. Nothing to send (a tag's
// first bytes, say) sends nothing, but the stream's headers go out with
// the first token all the same.
func (s *eventStream) token(text string) error {
	if err := s.start(); err != nil {
		return err
	}
	if s.events != nil {
		return s.sendEvents(s.events.Token(text))
	}
	return s.sendAll(s.chunks.Token(text))
}

// finish sends the last chunks (openai.Stream.Finish) and [DONE].
func (s *eventStream) finish(res engine.Result, queued time.Duration) {
	if s.events != nil {
		if s.start() == nil {
			s.sendEvents(s.events.Finish(res))
		}
		return
	}
	if s.start() != nil || s.sendAll(s.chunks.Finish(res, queued)) != nil {
		return
	}
	s.write([]byte("data: [DONE]\n\n"))
}

// sendAll sends chunks as events, up to the first write error.
func (s *eventStream) sendAll(chunks []openai.Chunk) error {
	for _, c := range chunks {
		if err := s.send("", c); err != nil {
			return err
		}
		s.sent++
	}
	return nil
}

// sendEvents sends a response's events, each named by its type, up to the
// first write error.
func (s *eventStream) sendEvents(events []openai.ResponseEvent) error {
	for _, e := range events {
		if err := s.send(e.Type(), e); err != nil {
			return err
		}
		s.sent++
	}
	return nil
}

// fail ends a started stream with an "error" event carrying an OpenAI error
// object; no [DONE] follows, so no client mistakes the text for complete.
func (s *eventStream) fail(e *apiError) {
	s.send("error", e.body())
}

// send writes one event: an optional event name and v as JSON data.
func (s *eventStream) send(event string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		s.err = err
		return err
	}
	b := make([]byte, 0, len(data)+len(event)+16)
	if event != "" {
		b = append(append(append(b, "event: "...), event...), '\n')
	}
	b = append(append(append(b, "data: "...), data...), "\n\n"...)
	return s.write(b)
}

// write sends b in one Write and flushes it.
func (s *eventStream) write(b []byte) error {
	if s.err != nil {
		return s.err
	}
	if _, err := s.w.Write(b); err != nil {
		s.err = err
		return err
	}
	s.flush()
	return s.err
}

func (s *eventStream) flush() {
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.err = err
	}
}
