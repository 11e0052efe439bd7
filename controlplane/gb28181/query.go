package gb28181

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/emiago/sipgo/sip"
	"go.uber.org/zap"
	"golang.org/x/text/encoding/simplifiedchinese"
)

// queryTimeout bounds waiting for a device's 200 to a MESSAGE.
const queryTimeout = 10 * time.Second

// nextSN numbers the platform's MANSCDP commands.
func (s *Service) nextSN() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sn++
	return s.sn
}

// sendManscdp sends a MANSCDP MESSAGE to a device through the transport
// it registered over and waits for its final answer.
func (s *Service) sendManscdp(ctx context.Context, id DeviceID, body string) error {
	s.mu.Lock()
	p := s.live[id]
	var transport, addr string
	if p != nil {
		transport, addr = p.transport, p.addr
	}
	s.mu.Unlock()
	if addr == "" {
		return fmt.Errorf("%w: %s has no transport on this node", ErrDeviceOffline, id)
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("device %s address %q: %w", id, addr, err)
	}
	port, _ := strconv.Atoi(portStr)
	gbk, err := simplifiedchinese.GBK.NewEncoder().String(body)
	if err != nil {
		return fmt.Errorf("MANSCDP body: %w", err)
	}
	req := sip.NewRequest(sip.MESSAGE, sip.Uri{User: string(id), Host: host, Port: port})
	req.SetTransport(strings.ToUpper(transport))
	req.SetDestination(addr)
	from := &sip.FromHeader{Address: sip.Uri{User: s.cfg.ID, Host: s.cfg.Domain}, Params: sip.NewParams()}
	from.Params.Add("tag", sip.GenerateTagN(16))
	req.AppendHeader(from)
	req.AppendHeader(&sip.ToHeader{Address: sip.Uri{User: string(id), Host: s.cfg.Domain}, Params: sip.NewParams()})
	req.AppendHeader(sip.NewHeader("Content-Type", "Application/MANSCDP+xml"))
	req.SetBody([]byte(gbk))
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	res, err := s.client.Do(ctx, req)
	if err != nil {
		return fmt.Errorf("MESSAGE to %s: %w", id, err)
	}
	if res.StatusCode != 200 {
		return fmt.Errorf("MESSAGE to %s: %d %s", id, res.StatusCode, res.Reason)
	}
	return nil
}

// queryCatalog asks a device for its channels; the answer comes as
// Catalog response MESSAGEs (catalogPage).
func (s *Service) queryCatalog(id DeviceID) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		body := fmt.Sprintf("<?xml version=\"1.0\" encoding=\"GB2312\"?>\r\n<Query>\r\n<CmdType>Catalog</CmdType>\r\n<SN>%d</SN>\r\n<DeviceID>%s</DeviceID>\r\n</Query>\r\n",
			s.nextSN(), id)
		if err := s.sendManscdp(s.ctx, id, body); err != nil {
			s.log.Info("GB28181 catalog query not delivered", zap.String("deviceId", string(id)), zap.Error(err))
		}
	}()
}
