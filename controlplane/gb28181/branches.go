package gb28181

import (
	"bytes"
	"sync"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// branches tells a new request that reuses the Via branch of an answered
// one from a retransmission of it, on UDP. The SIP library matches a
// request to its server transaction by branch, sent-by and method (RFC
// 3261 17.2.3) and keeps an answered non-INVITE transaction for 32 s to
// absorb retransmissions. SIPp, like some devices, derives the branch
// from the message's place in its scenario, so every keep-alive of a loop
// carries the same branch with the next CSeq: the library took each one
// for a retransmission of the previous and resent the old 200 (the old
// CSeq), which SIPp took for a duplicate response and answered by
// resending its keep-alive, thousands of times a second. A request whose
// CSeq number differs from the one that made the transaction is not its
// retransmission (RFC 3261 17.1.1.3: a retransmission is the same
// request), so that transaction is ended and the request starts its own;
// a true retransmission still gets the transaction's last response.
type branches struct {
	mu     sync.Mutex
	served map[string]servedTx
}

type servedTx struct {
	seq uint32
	tx  sip.ServerTransaction
}

// track wraps a request handler so that the transactions it serves over
// UDP are remembered until they end (TCP has no retransmissions: the
// library ends those transactions once answered).
func (b *branches) track(h sipgo.RequestHandler) sipgo.RequestHandler {
	return func(req *sip.Request, tx sip.ServerTransaction) {
		if req.Transport() == "UDP" {
			b.add(req, tx)
		}
		h(req, tx)
	}
}

func (b *branches) add(req *sip.Request, tx sip.ServerTransaction) {
	cseq := req.CSeq()
	key, err := sip.ServerTxKeyMake(req)
	if err != nil || cseq == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.served == nil {
		b.served = map[string]servedTx{}
	}
	// The library calls forget after releasing the transaction's lock, so
	// taking b.mu there does not invert this order.
	if !tx.OnTerminate(func(string, error) { b.forget(key, tx) }) {
		return
	}
	b.served[key] = servedTx{seq: cseq.SeqNo, tx: tx}
}

func (b *branches) forget(key string, tx sip.ServerTransaction) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if cur, ok := b.served[key]; ok && cur.tx == tx {
		delete(b.served, key)
	}
}

// filter is the transport's read filter: it sees each UDP datagram before
// the library parses and matches it, and ends the transaction a request
// with a reused branch would otherwise be taken for.
func (b *branches) filter(p sip.TransportReadProps, data []byte) ([]byte, error) {
	if p.Transport != "UDP" || bytes.HasPrefix(data, []byte("SIP/")) {
		return data, nil // responses match client transactions
	}
	b.mu.Lock()
	none := len(b.served) == 0
	b.mu.Unlock()
	if none {
		return data, nil
	}
	msg, err := sip.ParseMessage(data)
	if err != nil {
		return data, nil // the library answers or drops it
	}
	req, ok := msg.(*sip.Request)
	if !ok || req.IsAck() || req.IsCancel() || req.CSeq() == nil {
		return data, nil // ACK and CANCEL belong to their INVITE's transaction
	}
	key, err := sip.ServerTxKeyMake(req)
	if err != nil {
		return data, nil
	}
	b.mu.Lock()
	cur, ok := b.served[key]
	stale := ok && cur.seq != req.CSeq().SeqNo
	if stale {
		delete(b.served, key)
	}
	b.mu.Unlock()
	if stale {
		cur.tx.Terminate()
	}
	return data, nil
}
