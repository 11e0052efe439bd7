package flv

import (
	"encoding/binary"
	"math"
)

// amfProp is one property of the onMetaData ECMA array; value is a float64,
// a string or a bool.
type amfProp struct {
	name  string
	value any
}

// onMetaData encodes the script tag body players read for size, frame rate
// and codecs (AMF0: string "onMetaData", then an ECMA array).
func onMetaData(props []amfProp) []byte {
	b := []byte{2}
	b = appendAMFString(b, "onMetaData")
	b = append(b, 8)
	b = binary.BigEndian.AppendUint32(b, uint32(len(props)))
	for _, p := range props {
		b = appendAMFString(b, p.name)
		switch v := p.value.(type) {
		case float64:
			b = append(b, 0)
			b = binary.BigEndian.AppendUint64(b, math.Float64bits(v))
		case bool:
			x := byte(0)
			if v {
				x = 1
			}
			b = append(b, 1, x)
		case string:
			b = append(b, 2)
			b = appendAMFString(b, v)
		}
	}
	return append(b, 0, 0, 9)
}

func appendAMFString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}
