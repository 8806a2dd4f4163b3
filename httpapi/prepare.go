package httpapi

import (
	"net/http"
	"sync"
)

// prepare reads r's body and runs fn on it — decoding the JSON, tokenizing
// the prompt, formatting the messages with the chat template: the work
// that takes memory in proportion to the body, tens of times its size when
// a megabyte of text is tokenized — in one of Options.Slots places, handed
// out as the slots are (round-robin between clients, each client's in
// arrival order: see fairPool), and leaves the place before the request
// waits for a slot or generates. Admission bounds the bodies held (slots + queue, each
// of at most MaxBodyBytes); this bounds what they become: without it, every
// admitted request would decode and tokenize at once, and 66 requests of a
// megabyte took a server to 3 GB.
//
// As many places as slots: the operator sizes -slots to the memory and the
// cores there are (wasmlm serve's default is one per core, at most 4), and
// more requests preparing at once would finish no sooner, since preparing
// is work for a core; a number of its own (GOMAXPROCS, say) would tie the
// memory bound to the machine rather than to the configuration.
//
// The body is read before a place is taken, so a client slow to send it
// holds no place (only its admission). A request whose client leaves while
// it waits for a place leaves the line: prepare returns its context's error
// and fn does not run. Otherwise it returns fn's error, or the body's
// (413, 408, 400), having left its place. When fn succeeds, the request
// still holds its place: leave gives it up (a second call does nothing).
// A request that goes on to wait for a slot joins the slot line first
// (scheduler.join), then leaves its place, so that the requests take slots
// in the order they were prepared in: one prepared after it cannot
// overtake it between the two lines.
func (h *Handler) prepare(w http.ResponseWriter, r *http.Request, fn func(body []byte) *apiError) (leave func(), err error) {
	leave = func() {}
	body, e := readBody(r, w, h.opts.MaxBodyBytes)
	if e != nil {
		return leave, e
	}
	client := clientOf(r.Context())
	if _, err := h.preparing.take(r.Context(), client); err != nil {
		return leave, err
	}
	var once sync.Once
	leave = func() { once.Do(func() { h.preparing.put(struct{}{}, client) }) }
	if e := fn(body); e != nil {
		leave()
		return leave, e
	}
	return leave, nil
}
