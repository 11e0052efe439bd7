package rtsp

import "strings"

// Header holds an RTSP message's header fields in their order, with names
// as written: RTSP names are case-insensitive, but some cameras only
// understand "CSeq" spelt exactly so, which Go's MIME canonical form
// ("Cseq") would break.
type Header []HeaderField

// HeaderField is one header line.
type HeaderField struct {
	Name, Value string
}

// Get returns the first value of name (case-insensitive), or "".
func (h Header) Get(name string) string {
	for _, f := range h {
		if strings.EqualFold(f.Name, name) {
			return f.Value
		}
	}
	return ""
}

// Values returns every value of name.
func (h Header) Values(name string) []string {
	var out []string
	for _, f := range h {
		if strings.EqualFold(f.Name, name) {
			out = append(out, f.Value)
		}
	}
	return out
}

// Set replaces all values of name with value.
func (h *Header) Set(name, value string) {
	h.Del(name)
	*h = append(*h, HeaderField{name, value})
}

// Add appends a value of name.
func (h *Header) Add(name, value string) { *h = append(*h, HeaderField{name, value}) }

// Del removes every value of name.
func (h *Header) Del(name string) {
	out := (*h)[:0]
	for _, f := range *h {
		if !strings.EqualFold(f.Name, name) {
			out = append(out, f)
		}
	}
	*h = out
}
