package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"time"
)

// A light player: what a browser's MSE player does before it can show
// the first frame, without a decoder's start-up: fetch the boxes, find
// the keyframe's fragment, hold its moof and its whole mdat.

// box is a top-level box header read from a stream or a buffer.
type box struct {
	typ        string
	off, size  int64
	hdr        int64
	payloadEnd int64
}

// nextBox reads the header of the box at off in b (nil when b does not
// hold the whole header).
func nextBox(b []byte, off int64) (*box, error) {
	if int64(len(b))-off < 8 {
		return nil, nil
	}
	bx := &box{typ: string(b[off+4 : off+8]), off: off, size: int64(binary.BigEndian.Uint32(b[off:])), hdr: 8}
	if bx.size == 1 {
		if int64(len(b))-off < 16 {
			return nil, nil
		}
		bx.size, bx.hdr = int64(binary.BigEndian.Uint64(b[off+8:])), 16
	}
	if bx.size < bx.hdr {
		return nil, fmt.Errorf("box %q at %d of %d bytes", bx.typ, off, bx.size)
	}
	bx.payloadEnd = off + bx.size
	return bx, nil
}

// readFragment reads from r (positioned at a moof) the moof and its
// whole mdat, and answers how many bytes that was.
func readFragment(r io.Reader) (int64, error) {
	var n int64
	hdr := make([]byte, 8)
	for _, want := range []string{"moof", "mdat"} {
		if _, err := io.ReadFull(r, hdr); err != nil {
			return n, err
		}
		size := int64(binary.BigEndian.Uint32(hdr))
		if string(hdr[4:]) != want || size < 8 {
			return n, fmt.Errorf("%q of %d bytes where a %s was due", hdr[4:], size, want)
		}
		if _, err := io.CopyN(io.Discard, r, size-8); err != nil {
			return n, err
		}
		n += size
	}
	return n, nil
}

// startFirstFragment times GET url?start=S until the init, the first
// moof and its whole mdat are in.
func startFirstFragment(client *http.Client, url string) (time.Duration, error) {
	t := time.Now()
	resp, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	// ftyp and moov, then the fragment.
	hdr := make([]byte, 8)
	for _, want := range []string{"ftyp", "moov"} {
		if _, err := io.ReadFull(resp.Body, hdr); err != nil {
			return 0, err
		}
		size := int64(binary.BigEndian.Uint32(hdr))
		if string(hdr[4:]) != want || size < 8 {
			return 0, fmt.Errorf("%q where a %s was due", hdr[4:], want)
		}
		if _, err := io.CopyN(io.Discard, resp.Body, size-8); err != nil {
			return 0, err
		}
	}
	if _, err := readFragment(resp.Body); err != nil {
		return 0, err
	}
	return time.Since(t), nil
}

func getRange(client *http.Client, url string, from, to int64) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", from, to))
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusPartialContent {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s Range %d-%d: %s", url, from, to, resp.Status)
	}
	return resp, nil
}

// rangeFirstFragment times a seek to at seconds from the file's start in
// the plain file over HTTP Range, the way a player with the file's
// segment index does: the first 64 KB (more when the boxes before the
// first moof need more), the reference of the first sidx (the video
// track's) that holds at, then that reference's first moof and whole
// mdat. A file without an sidx fails.
func rangeFirstFragment(client *http.Client, url string, at time.Duration) (time.Duration, error) {
	t := time.Now()
	var head []byte
	need := int64(64 << 10)
	var sidx *box
	for sidx == nil {
		resp, err := getRange(client, url, int64(len(head)), need-1)
		if err != nil {
			return 0, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, err
		}
		head = append(head, b...)
		for off := int64(0); ; {
			bx, err := nextBox(head, off)
			if err != nil {
				return 0, err
			}
			if bx == nil || bx.payloadEnd > int64(len(head)) {
				need = off + max(bx.sizeOr(64<<10), 64<<10)
				break
			}
			if bx.typ == "sidx" {
				sidx = bx
				break
			}
			if bx.typ == "moof" {
				return 0, fmt.Errorf("%s has no sidx before its first moof", url)
			}
			off = bx.payloadEnd
		}
	}
	d := head[sidx.off+sidx.hdr : sidx.payloadEnd]
	if len(d) < 32 || d[0] != 1 {
		return 0, fmt.Errorf("sidx version %d of %d bytes", d[0], len(d))
	}
	scale := uint64(binary.BigEndian.Uint32(d[8:]))
	ept := binary.BigEndian.Uint64(d[12:])
	off := sidx.payloadEnd + int64(binary.BigEndian.Uint64(d[20:]))
	n := int(binary.BigEndian.Uint16(d[30:]))
	if len(d) < 32+12*n || n == 0 {
		return 0, fmt.Errorf("sidx of %d references in %d bytes", n, len(d))
	}
	target := ept + uint64(at.Seconds()*float64(scale))
	var from, size int64
	for i := range n {
		r := d[32+12*i:]
		rsize, dur := int64(binary.BigEndian.Uint32(r)), uint64(binary.BigEndian.Uint32(r[4:]))
		if i == 0 || ept <= target {
			from, size = off, rsize
		}
		off += rsize
		ept += dur
	}
	resp, err := getRange(client, url, from, from+size-1)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := readFragment(resp.Body); err != nil {
		return 0, err
	}
	return time.Since(t), nil
}

// sizeOr is the box's size, or def for a header not yet read.
func (b *box) sizeOr(def int64) int64 {
	if b == nil {
		return def
	}
	return b.size
}
