package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
)

// limitListener accepts at most n connections at once: while n are open,
// Accept waits (the kernel keeps the next ones in its backlog) until one
// closes. Without it, a client that opens connections and leaves them idle
// takes every file descriptor, and the server, failing to accept, locks
// everyone else out.
//
// Nor may idle connections hold the places: an http.Server that serves it
// with ConnState as its hook tells it which connections are idle (kept
// alive between requests), and whenever all n places are taken, the
// connection idle longest is closed: when a new connection takes the last
// place, and when a connection goes idle while all are taken. So n open
// connections are never idle, a client waiting in the backlog (which the
// listener cannot see, so it assumes there may be one) is accepted at once
// rather than after the idle timeout, and below the cap keep-alive is
// untouched. A client that sends its next request just as its idle
// connection is closed sees it closed without an answer: the race every
// keep-alive close has, the idle timeout's too. A new connection that has
// sent nothing yet is not closed (it is the client the place is for); the
// read timeout bounds it.
//
// One lock orders the count of open connections and the idle set; a
// connection chosen to close stops counting as open under it, and is closed
// after it is released (Close takes it), so two events at the cap never
// close two connections for one place. The simpler-looking alternative,
// http.Server.SetKeepAlivesEnabled(false) at the cap and (true) below it,
// would close every idle connection, not one, and end every answer's
// connection while at the cap; and as it closes connections it could not
// be called under the lock, so turning keep-alive back on could overtake
// turning it off and leave it in the wrong state.
type limitListener struct {
	net.Listener
	slots     chan struct{} // one per open connection, and one for a waiting Accept
	done      chan struct{} // closed by Close, to end a waiting Accept
	closeOnce sync.Once

	mu      sync.Mutex
	open    int                   // connections open, not counting those chosen to close
	idle    map[*limitConn]uint64 // the idle connections, each with when (in order) it went idle
	idleSeq uint64
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{}), idle: map[*limitConn]uint64{}}
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
	l.mu.Lock()
	l.open++
	l.mu.Unlock()
	return &limitConn{Conn: c, l: l, release: sync.OnceFunc(func() { <-l.slots })}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// ConnState is the hook for http.Server.ConnState: it keeps the set of idle
// connections and, when all places are taken, closes the one idle longest.
func (l *limitListener) ConnState(nc net.Conn, state http.ConnState) {
	c, ok := nc.(*limitConn)
	if !ok {
		return
	}
	l.mu.Lock()
	if state == http.StateIdle && !c.gone {
		l.idleSeq++
		l.idle[c] = l.idleSeq
	} else {
		delete(l.idle, c)
	}
	var victim *limitConn
	if l.open == cap(l.slots) {
		for ic, seq := range l.idle {
			if victim == nil || seq < l.idle[victim] {
				victim = ic
			}
		}
		if victim != nil {
			l.forgetLocked(victim)
		}
	}
	l.mu.Unlock()
	if victim != nil {
		victim.Close()
	}
}

// forgetLocked stops counting c as open (l.mu held).
func (l *limitListener) forgetLocked(c *limitConn) {
	if !c.gone {
		c.gone = true
		l.open--
		delete(l.idle, c)
	}
}

// limitConn gives its place back when it closes.
type limitConn struct {
	net.Conn
	l       *limitListener
	release func() // gives the place back, once
	gone    bool   // under l.mu: closed or chosen to close, so no longer counted open
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.l.mu.Lock()
	c.l.forgetLocked(c)
	c.l.mu.Unlock()
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
