package raftnode

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"
)

// The internal link carries raft RPCs and forwarded store requests between
// control nodes on the raft port. Each connection is TLS (for privacy) and
// both ends then prove they hold a cluster link key by an HMAC over keying
// material exported from that very TLS session, so a connection cannot be
// relayed or answered by anyone without the key.

const (
	linkMagic      = "SVC1"
	streamRaft     = 'R'
	streamForward  = 'F'
	handshakeLimit = 5 * time.Second
	ekmLabel       = "svc-internal-link"
)

var errLinkAuth = errors.New("internal link: peer failed authentication")

// linkMux accepts authenticated connections and sorts them by stream kind.
type linkMux struct {
	ln        net.Listener
	advertise net.Addr
	keys      [][]byte // keys[0] signs; any key verifies
	serverTLS *tls.Config
	clientTLS *tls.Config
	log       *zap.Logger

	raftConns  chan net.Conn
	fwdConns   chan net.Conn
	handshakes chan struct{} // bounds handshakes in flight
	lastWarn   atomic.Int64
	closeOnce  sync.Once
	closed     chan struct{}
	conns      linkConns
}

// maxHandshakes bounds concurrent handshakes from unauthenticated peers.
const maxHandshakes = 64

func newLinkMux(bind, advertise string, keys [][]byte, log *zap.Logger) (*linkMux, error) {
	if len(keys) == 0 {
		return nil, errors.New("internal link: no link key")
	}
	cert, err := selfSignedCert()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	if advertise == "" {
		advertise = ln.Addr().String()
	}
	adv, err := net.ResolveTCPAddr("tcp", advertise)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("advertise address %q: %w", advertise, err)
	}
	m := &linkMux{
		ln: ln, advertise: adv, keys: keys, log: log,
		serverTLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13},
		// The peer's certificate is not what authenticates it; the HMAC
		// bound to this session is.
		clientTLS:  &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13},
		raftConns:  make(chan net.Conn, 16),
		fwdConns:   make(chan net.Conn, 16),
		handshakes: make(chan struct{}, maxHandshakes),
		closed:     make(chan struct{}),
	}
	go m.acceptLoop()
	return m, nil
}

func selfSignedCert() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "svc internal link"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

func proof(key, ekm []byte, role byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte{role})
	m.Write(ekm)
	return m.Sum(nil)
}

func (m *linkMux) acceptLoop() {
	for {
		c, err := m.ln.Accept()
		if err != nil {
			select {
			case <-m.closed:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			m.log.Warn("internal link accept failed", zap.Error(err))
			time.Sleep(50 * time.Millisecond)
			continue
		}
		select {
		case m.handshakes <- struct{}{}:
		default:
			// Too many handshakes in flight: refuse rather than queue.
			c.Close()
			m.warn("internal link refused a connection: too many handshakes in flight", c.RemoteAddr().String(), nil)
			continue
		}
		go func() {
			defer func() { <-m.handshakes }()
			m.handshake(c)
		}()
	}
}

// warn logs a refused connection at most once a second, so a flood of bad
// connections cannot flood the log.
func (m *linkMux) warn(msg, remote string, err error) {
	now := time.Now().UnixNano()
	last := m.lastWarn.Load()
	if now-last < int64(time.Second) || !m.lastWarn.CompareAndSwap(last, now) {
		return
	}
	m.log.Warn(msg, zap.String("remote", remote), zap.Error(err))
}

func (m *linkMux) handshake(raw net.Conn) {
	raw.SetDeadline(time.Now().Add(handshakeLimit))
	c := tls.Server(raw, m.serverTLS)
	kind, err := m.serverSide(c)
	if err != nil {
		m.warn("internal link handshake refused", raw.RemoteAddr().String(), err)
		c.Close()
		return
	}
	raw.SetDeadline(time.Time{})
	target := m.raftConns
	if kind == streamForward {
		target = m.fwdConns
	}
	tc, err := m.track(c)
	if err != nil {
		return
	}
	select {
	case target <- tc:
	case <-m.closed:
		tc.Close()
	}
}

func (m *linkMux) serverSide(c *tls.Conn) (byte, error) {
	if err := c.Handshake(); err != nil {
		return 0, err
	}
	cs := c.ConnectionState()
	ekm, err := cs.ExportKeyingMaterial(ekmLabel, nil, 32)
	if err != nil {
		return 0, err
	}
	hello := make([]byte, len(linkMagic)+1+sha256.Size)
	if _, err := io.ReadFull(c, hello); err != nil {
		return 0, err
	}
	if string(hello[:len(linkMagic)]) != linkMagic {
		return 0, errLinkAuth
	}
	kind := hello[len(linkMagic)]
	if kind != streamRaft && kind != streamForward {
		return 0, fmt.Errorf("internal link: unknown stream kind %q", kind)
	}
	got := hello[len(linkMagic)+1:]
	for _, k := range m.keys {
		if hmac.Equal(got, proof(k, ekm, 'c')) {
			_, err := c.Write(proof(k, ekm, 's'))
			return kind, err
		}
	}
	return 0, errLinkAuth
}

// dial opens an authenticated stream of the given kind to a peer.
func (m *linkMux) dial(ctx context.Context, addr string, kind byte) (net.Conn, error) {
	if m.isCut() {
		return nil, errLinkCut
	}
	d := &net.Dialer{Timeout: handshakeLimit}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(handshakeLimit)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	raw.SetDeadline(deadline)
	c := tls.Client(raw, m.clientTLS)
	if err := m.clientSide(c, kind); err != nil {
		c.Close()
		return nil, err
	}
	raw.SetDeadline(time.Time{})
	return m.track(c)
}

func (m *linkMux) clientSide(c *tls.Conn, kind byte) error {
	if err := c.Handshake(); err != nil {
		return err
	}
	cs := c.ConnectionState()
	ekm, err := cs.ExportKeyingMaterial(ekmLabel, nil, 32)
	if err != nil {
		return err
	}
	hello := append([]byte(linkMagic), kind)
	hello = append(hello, proof(m.keys[0], ekm, 'c')...)
	if _, err := c.Write(hello); err != nil {
		return err
	}
	reply := make([]byte, sha256.Size)
	if _, err := io.ReadFull(c, reply); err != nil {
		return fmt.Errorf("%w: %w", errLinkAuth, err)
	}
	if !hmac.Equal(reply, proof(m.keys[0], ekm, 's')) {
		return errLinkAuth
	}
	return nil
}

func (m *linkMux) Close() error {
	var err error
	m.closeOnce.Do(func() {
		close(m.closed)
		err = m.ln.Close()
		// Close connections that were handed over but never accepted.
		for _, ch := range []chan net.Conn{m.raftConns, m.fwdConns} {
			for drained := false; !drained; {
				select {
				case c := <-ch:
					c.Close()
				default:
					drained = true
				}
			}
		}
	})
	return err
}

// raftLayer is the raft.StreamLayer view of the mux.
type raftLayer struct{ m *linkMux }

var _ raft.StreamLayer = raftLayer{}

func (l raftLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.m.raftConns:
		return c, nil
	case <-l.m.closed:
		return nil, net.ErrClosed
	}
}
func (l raftLayer) Close() error   { return l.m.Close() }
func (l raftLayer) Addr() net.Addr { return l.m.advertise }
func (l raftLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return l.m.dial(ctx, string(addr), streamRaft)
}

// forwardListener is the net.Listener the internal HTTP server reads from.
type forwardListener struct{ m *linkMux }

func (l forwardListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.m.fwdConns:
		return c, nil
	case <-l.m.closed:
		return nil, net.ErrClosed
	}
}
func (l forwardListener) Close() error   { return nil }
func (l forwardListener) Addr() net.Addr { return l.m.advertise }
