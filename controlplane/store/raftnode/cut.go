package raftnode

import (
	"errors"
	"net"
	"sync"
)

// errLinkCut is what a dial answers while the node is cut off.
var errLinkCut = errors.New("internal link: this node is cut off (SetCutOff)")

// SetCutOff cuts this node off from the other control nodes (true) or
// lets it back (false): while cut, its internal link drops every open
// connection and refuses new ones both ways, as a network partition
// would, while the process and its other ports go on. Fault tests use it
// to cut off a control node running in their process.
func (n *Node) SetCutOff(cut bool) { n.mux.setCut(cut) }

// linkConns are the open connections of a mux, so a cut can drop them.
type linkConns struct {
	mu  sync.Mutex
	cut bool
	set map[*linkConn]struct{}
}

// linkConn is an open internal link connection.
type linkConn struct {
	net.Conn
	m    *linkMux
	once sync.Once
}

func (c *linkConn) Close() error {
	c.once.Do(func() {
		c.m.conns.mu.Lock()
		delete(c.m.conns.set, c)
		c.m.conns.mu.Unlock()
	})
	return c.Conn.Close()
}

// track registers an authenticated connection, or closes it while cut.
func (m *linkMux) track(c net.Conn) (net.Conn, error) {
	m.conns.mu.Lock()
	defer m.conns.mu.Unlock()
	if m.conns.cut {
		c.Close()
		return nil, errLinkCut
	}
	if m.conns.set == nil {
		m.conns.set = map[*linkConn]struct{}{}
	}
	lc := &linkConn{Conn: c, m: m}
	m.conns.set[lc] = struct{}{}
	return lc, nil
}

func (m *linkMux) isCut() bool {
	m.conns.mu.Lock()
	defer m.conns.mu.Unlock()
	return m.conns.cut
}

func (m *linkMux) setCut(cut bool) {
	m.conns.mu.Lock()
	m.conns.cut = cut
	var open []*linkConn
	if cut {
		for c := range m.conns.set {
			open = append(open, c)
		}
	}
	m.conns.mu.Unlock()
	for _, c := range open {
		c.Close()
	}
}
