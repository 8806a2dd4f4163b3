package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/wasmlm/wasmlm/openai"
)

// Sentinel errors; New and the handler wrap them with %w and add detail.
var (
	// ErrInvalidOptions means Options (or the model given to New) cannot be served.
	ErrInvalidOptions = errors.New("httpapi: invalid options")
	// ErrQueueFull means every slot is busy and the wait queue is full: the
	// request is answered 503 at once.
	ErrQueueFull = errors.New("httpapi: server overloaded: the request queue is full")
	// ErrClientQueueFull means the request's client (its key, or without
	// keys its address) has as many requests in the server as one client
	// may (Options.ClientQueue): the request is answered 429 at once.
	ErrClientQueueFull = errors.New("httpapi: too many requests of this client are waiting")
	// ErrShuttingDown means the handler is shutting down (Handler.Shutdown):
	// the request was refused with 503, or its generation stopped when the
	// grace period ended.
	ErrShuttingDown = errors.New("httpapi: the server is shutting down")
	// ErrPanic means serving a request panicked (in the engine or here); the
	// handler recovers and answers 500 or an error event, so one bad request
	// cannot kill the process (or, in an edge worker, the Go instance).
	ErrPanic = errors.New("httpapi: panic while serving the request")
)

// The OpenAI error types this API uses.
const (
	typeInvalidRequest = openai.TypeInvalidRequest
	typeServer         = openai.TypeServer
)

// apiError is an OpenAI error object and the HTTP status it is sent with.
type apiError struct {
	status  int
	message string
	typ     string
	param   string // "" → null
	code    string // "" → null
	header  http.Header
}

func (e *apiError) Error() string { return e.message }

// errorBody is the JSON shape of an OpenAI error response.
type errorBody struct {
	Error errorObject `json:"error"`
}

type errorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) body() errorBody {
	nullable := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	return errorBody{Error: errorObject{Message: e.message, Type: e.typ, Param: nullable(e.param), Code: nullable(e.code)}}
}

// badRequest is a 400 invalid_request_error about one request field.
func badRequest(param, code, format string, args ...any) *apiError {
	return requestError(openai.BadRequest(param, code, format, args...))
}

// internalError is a 500 that does not blame the request.
func internalError(err error) *apiError { return requestError(openai.ServerError(err)) }

// writeError sends e as an OpenAI error response.
func writeError(w http.ResponseWriter, e *apiError) {
	for k, v := range e.header {
		w.Header()[k] = v
	}
	writeJSON(w, e.status, e.body())
}

// writeJSON sends v as the whole response body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	encodeJSON(status, v).write(w)
}

// encoded is a JSON response, encoded ahead of sending (as a large
// /tokenize answer is, while its request holds its place to prepare).
type encoded struct {
	status int
	body   []byte
}

// encodeJSON encodes v, to be sent with status.
func encodeJSON(status int, v any) encoded {
	b, err := json.Marshal(v)
	if err != nil {
		// Every value sent is built from plain structs, strings and numbers;
		// a marshal failure is a bug, reported without recursion.
		return encoded{http.StatusInternalServerError,
			[]byte(`{"error":{"message":"httpapi: cannot encode the response","type":"server_error","param":null,"code":"internal_error"}}`)}
	}
	return encoded{status, b}
}

// write sends the response, and a newline after it. A failed write means
// the client left: nothing to do.
func (e encoded) write(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	_, _ = w.Write(e.body)
	_, _ = w.Write([]byte{'\n'})
}

// generationError maps an error of the engine (or of what it calls) to the
// status and error object it deserves (openai.ErrorOf): an invalid option
// names its field; errors about the prompt name promptParam ("prompt",
// "messages").
func generationError(err error, promptParam string) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	return requestError(openai.ErrorOf(err, promptParam))
}

// requestError is e with its status: 400 for an invalid request, 500 for
// a server error.
func requestError(e *openai.Error) *apiError {
	status := http.StatusBadRequest
	if e.Type != openai.TypeInvalidRequest {
		status = http.StatusInternalServerError
	}
	return &apiError{status: status, typ: e.Type, param: e.Param, code: e.Code, message: e.Message}
}
