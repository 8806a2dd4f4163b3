package main

import (
	"fmt"
	"io"
	"net"
	"sync"
)

// limitListener accepts at most n connections at once: while n are open,
// Accept waits (the kernel keeps the next ones in its backlog) until one
// closes. Without it, a client that opens connections and leaves them idle
// takes every file descriptor, and the server, failing to accept, locks
// everyone else out; with it, the idle ones are closed by the idle timeout
// and the waiting ones served.
type limitListener struct {
	net.Listener
	slots     chan struct{} // one per open connection
	done      chan struct{} // closed by Close, to end a waiting Accept
	closeOnce sync.Once
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: sync.OnceFunc(func() { <-l.slots })}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its place back when it closes.
type limitConn struct {
	net.Conn
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}

// CloseWrite lets net/http half-close the connection before it closes it
// (after an answer to a request whose body it did not read), as it does a
// *net.TCPConn, so that the client reads the answer rather than a reset.
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// fdsPerConn is what the connection cap counts per connection: its socket,
// and a file of the web page being sent.
const fdsPerConn = 2

// fdReserve are the file descriptors left for the rest of the process
// (the listener, standard streams, the runtime's poller, a model file).
const fdReserve = 16

// capConns lowers maxConns to what the process's file-descriptor limit
// (limit, 0: unknown) allows, saying so on log.
func capConns(maxConns int, limit uint64, log io.Writer) int {
	if limit == 0 || maxConns == 0 {
		return maxConns
	}
	fit := max(int((int64(limit)-fdReserve)/fdsPerConn), 1)
	if maxConns <= fit {
		return maxConns
	}
	fmt.Fprintf(log, "serve: -max-conns %d lowered to %d: the process may open only %d files (ulimit -n)\n", maxConns, fit, limit)
	return fit
}
