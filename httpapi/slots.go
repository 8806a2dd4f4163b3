package httpapi

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/wasmlm/wasmlm/engine"
)

// llama.cpp's slot actions: POST /slots/{id}?action=save|restore|erase,
// with a body {"filename": "..."} for save and restore. Slot id is the
// index of one of the handler's Options.Slots sessions, each with its own
// KV cache; save writes the session's conversation (engine.Session.SaveState:
// its tokens, the cache's used slots, the recurrent state, the last
// logits) to a file of Options.SlotSavePath, restore reads one back into
// the session, erase forgets its conversation. A completion takes the slot
// freed (or restored) most recently, and the slots start free so that slot
// 0 goes first: a lone client's requests all run on slot 0, and the next
// request after a restore runs on the restored session and reuses its
// cached prefix; with several clients, requests in between may take it.

// slotsPrefix is the path of the slot actions, before the slot's id.
const slotsPrefix = "/slots/"

// maxSlotFilename bounds a slot file's name, in bytes (a file system's
// usual limit on one name).
const maxSlotFilename = 255

// slotSaved is llama.cpp's answer to a save.
type slotSaved struct {
	ID       int    `json:"id_slot"`
	Filename string `json:"filename"`
	Saved    int    `json:"n_saved"`
	Written  int64  `json:"n_written"`
	Timings  struct {
		SaveMS float64 `json:"save_ms"`
	} `json:"timings"`
}

// slotRestored is llama.cpp's answer to a restore.
type slotRestored struct {
	ID       int    `json:"id_slot"`
	Filename string `json:"filename"`
	Restored int    `json:"n_restored"`
	Read     int64  `json:"n_read"`
	Timings  struct {
		RestoreMS float64 `json:"restore_ms"`
	} `json:"timings"`
}

// slotErased is llama.cpp's answer to an erase.
type slotErased struct {
	ID     int `json:"id_slot"`
	Erased int `json:"n_erased"`
}

// slotRoute is the route of a path under slotsPrefix.
func (h *Handler) slotRoute() route {
	return route{method: http.MethodPost, serve: h.serveSlots}
}

// serveSlots is POST /slots/{id}?action=save|restore|erase. Without
// Options.SlotSavePath it is 501, as llama.cpp's without --slot-save-path;
// a slot generating is 503 (llama.cpp defers the action until the slot is
// idle; here the client retries).
func (h *Handler) serveSlots(w http.ResponseWriter, r *http.Request) {
	if h.opts.SlotSavePath == "" {
		writeError(w, &apiError{status: http.StatusNotImplemented, typ: "not_supported_error", code: "not_supported",
			message: "This server does not support slots action. Start it with `-slot-save-path`"})
		return
	}
	id, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, slotsPrefix))
	if err != nil || id < 0 || id >= len(h.sched.sessions) {
		writeError(w, badRequest("id_slot", "invalid_slot", "Invalid slot ID: %q (the slots are 0..%d)", strings.TrimPrefix(r.URL.Path, slotsPrefix), len(h.sched.sessions)-1))
		return
	}
	action := r.URL.Query().Get("action")
	if !slices.Contains([]string{"save", "restore", "erase"}, action) {
		writeError(w, badRequest("action", "invalid_action", "Invalid action %q: save, restore or erase", action))
		return
	}
	body, e := readBody(r, w, h.opts.MaxBodyBytes)
	if e != nil {
		writeError(w, e)
		return
	}
	var filename string
	if action != "erase" {
		if filename, e = slotFilename(body); e != nil {
			writeError(w, e)
			return
		}
	}
	client := clientOf(r.Context())
	want := h.sched.sessions[id]
	sess, ok := h.sched.slots.claim(client, func(s *engine.Session) bool { return s == want })
	if !ok {
		writeError(w, &apiError{status: http.StatusServiceUnavailable, typ: "unavailable_error", code: "slot_busy",
			message: fmt.Sprintf("slot %d is busy: it is generating, or the server is shutting down. Retry once it is idle.", id),
			header:  http.Header{"Retry-After": {"1"}}})
		return
	}
	// Put back last, the restored session is the one the next request takes.
	defer h.sched.slots.put(sess, client)
	var res any
	switch action {
	case "save":
		res, e = h.saveSlot(sess, id, filename)
	case "restore":
		res, e = h.restoreSlot(sess, id, filename)
	default:
		res = slotErased{ID: id, Erased: sess.CachedTokens()}
		sess.Reset()
	}
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// slotFilename reads {"filename": "..."}: a plain file name, which
// cannot reach outside the save directory (no separators, not "." or
// "..", no control characters).
func slotFilename(body []byte) (string, *apiError) {
	var req struct {
		Filename *string `json:"filename"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return "", badRequest("", "invalid_json", "the body must be a JSON object {\"filename\": \"...\"}: %v", err)
	}
	if req.Filename == nil {
		return "", badRequest("filename", "missing_required_parameter", "filename is required")
	}
	name := *req.Filename
	bad := name == "" || name == "." || name == ".." || len(name) > maxSlotFilename || !utf8.ValidString(name) ||
		strings.ContainsAny(name, `/\:`) || strings.ContainsFunc(name, unicode.IsControl)
	if bad {
		return "", badRequest("filename", "invalid_filename", "Invalid filename %q: a file name of at most %d bytes, without / \\ : or control characters, not . or ..", name, maxSlotFilename)
	}
	return name, nil
}

// slotDir opens the save directory, in which no name reaches outside it
// (os.Root); a failure is a 500 saying which action failed.
func (h *Handler) slotDir(action string) (*os.Root, *apiError) {
	root, err := os.OpenRoot(h.opts.SlotSavePath)
	if err != nil {
		return nil, internalError(fmt.Errorf("unable to %s slot: %w", action, err))
	}
	return root, nil
}

// saveSlot writes sess's state to filename in the save directory: to a
// temporary file first, renamed once complete, so that a failed save
// leaves no half-written state under the name.
func (h *Handler) saveSlot(sess *engine.Session, id int, filename string) (slotSaved, *apiError) {
	start := time.Now()
	root, e := h.slotDir("save")
	if e != nil {
		return slotSaved{}, e
	}
	defer root.Close()
	tmp := filename + ".tmp"
	f, err := root.Create(tmp)
	if err != nil {
		return slotSaved{}, internalError(fmt.Errorf("unable to save slot: %w", err))
	}
	cw := &countedWriter{w: bufio.NewWriterSize(f, 1<<20)}
	err = sess.SaveState(cw)
	if err == nil {
		err = cw.w.(*bufio.Writer).Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, filename)
	}
	if err != nil {
		_ = root.Remove(tmp)
		if errors.Is(err, engine.ErrStateUnsupported) {
			return slotSaved{}, generationError(err, "id_slot")
		}
		return slotSaved{}, internalError(fmt.Errorf("unable to save slot: %w", err))
	}
	res := slotSaved{ID: id, Filename: filename, Saved: sess.CachedTokens(), Written: cw.n}
	res.Timings.SaveMS = float64(time.Since(start).Microseconds()) / 1000
	return res, nil
}

// restoreSlot reads filename from the save directory into sess. A file
// that is missing, malformed or of another model is 400, as llama.cpp
// answers; a malformed one leaves the slot empty.
func (h *Handler) restoreSlot(sess *engine.Session, id int, filename string) (slotRestored, *apiError) {
	start := time.Now()
	root, e := h.slotDir("restore")
	if e != nil {
		return slotRestored{}, e
	}
	defer root.Close()
	f, err := root.Open(filename)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return slotRestored{}, &apiError{status: http.StatusBadRequest, typ: typeInvalidRequest, param: "filename", code: "file_not_found",
				message: fmt.Sprintf("Unable to restore slot: no saved slot %q", filename)}
		}
		return slotRestored{}, internalError(fmt.Errorf("unable to restore slot: %w", err))
	}
	defer f.Close()
	cr := &countedReader{r: f}
	if err := sess.LoadState(cr); err != nil {
		e := generationError(err, "filename")
		e.message = "Unable to restore slot: " + e.message
		return slotRestored{}, e
	}
	res := slotRestored{ID: id, Filename: filename, Restored: sess.CachedTokens(), Read: cr.n}
	res.Timings.RestoreMS = float64(time.Since(start).Microseconds()) / 1000
	return res, nil
}

// countedWriter counts the bytes written through it.
type countedWriter struct {
	w io.Writer
	n int64
}

func (c *countedWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// countedReader counts the bytes read through it.
type countedReader struct {
	r io.Reader
	n int64
}

func (c *countedReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// claim takes the free item match accepts for client, without waiting:
// false when none is free (taken, or the pool closed). The caller puts it
// back.
func (f *fairPool[T]) claim(client string, match func(T) bool) (T, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var none T
	if f.closed {
		return none, false
	}
	i := slices.IndexFunc(f.free, match)
	if i < 0 {
		return none, false
	}
	x := f.free[i]
	f.free = slices.Delete(f.free, i, i+1)
	f.grantTo(client)
	return x, true
}
