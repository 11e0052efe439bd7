package system

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
	"net/smtp"
	"strconv"
	"strings"
	"time"
)

// EmailResult is the outcome of a test e-mail.
type EmailResult struct {
	Sent      bool
	Server    string // host:port of the SMTP server
	Duration  time.Duration
	MessageID string
}

// SendTestEmail sends one message through the configured SMTP server.
func (s *Service) SendTestEmail(to, subject, actor string) (EmailResult, error) {
	cfg := s.d.SMTP
	if cfg.Host == "" {
		return EmailResult{}, ErrEmailNotConfigured
	}
	if strings.ContainsAny(to, "\r\n") || strings.ContainsAny(subject, "\r\n") {
		return EmailResult{}, fmt.Errorf("%w: line breaks are not allowed in the address or subject", ErrInvalidEmail)
	}
	if subject == "" {
		subject = "svc operations e-mail test"
	}
	var idb [12]byte
	rand.Read(idb[:])
	msgID := fmt.Sprintf("<%s@%s>", hex.EncodeToString(idb[:]), s.d.NodeID)
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	body := fmt.Sprintf("From: %s\r\nTo: %s\r\nSubject: %s\r\nMessage-ID: %s\r\nDate: %s\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"+
		"This is a test of the operations e-mail of control node %s, requested by %s.\r\n",
		cfg.From, to, subject, msgID, time.Now().UTC().Format(time.RFC1123Z), s.d.NodeID, actor)
	start := time.Now()
	if err := sendMail(cfg, addr, to, []byte(body)); err != nil {
		return EmailResult{Server: addr}, fmt.Errorf("%w: %w", ErrEmailFailed, err)
	}
	return EmailResult{Sent: true, Server: addr, Duration: time.Since(start), MessageID: msgID}, nil
}

func sendMail(cfg SMTP, addr, to string, msg []byte) error {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return err
	}
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	c, err := smtp.NewClient(conn, cfg.Host)
	if err != nil {
		conn.Close()
		return err
	}
	defer c.Close()
	if cfg.StartTLS {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return fmt.Errorf("server does not offer STARTTLS")
		}
		if err := c.StartTLS(&tls.Config{ServerName: cfg.Host, MinVersion: tls.VersionTLS12}); err != nil {
			return err
		}
	}
	if cfg.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", cfg.Username, cfg.Password, cfg.Host)); err != nil {
			return err
		}
	}
	if err := c.Mail(cfg.From); err != nil {
		return err
	}
	if err := c.Rcpt(to); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(msg); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}
