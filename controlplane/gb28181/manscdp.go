package gb28181

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"golang.org/x/text/encoding/simplifiedchinese"
)

// MaxManscdpBody bounds a MANSCDP body: a Catalog page of a few dozen
// items is a few KiB; 64 KiB leaves room and stops a device (or someone
// pretending to be one) from making the node parse megabytes.
const MaxManscdpBody = 64 << 10

// Manscdp is the part of a MANSCDP message (GB/T 28181 annex A) the
// platform reads: the root element says Query, Response, Notify or
// Control, CmdType what it is.
type Manscdp struct {
	Root     string
	CmdType  string `xml:"CmdType"`
	SN       int64  `xml:"SN"`
	DeviceID string `xml:"DeviceID"`
	Status   string `xml:"Status"`
	Result   string `xml:"Result"`
	// Catalog response.
	SumNum     int           `xml:"SumNum"`
	DeviceList []CatalogItem `xml:"DeviceList>Item"`
	// DeviceInfo response.
	DeviceName   string `xml:"DeviceName"`
	Manufacturer string `xml:"Manufacturer"`
	Model        string `xml:"Model"`
	// RecordInfo response.
	Name       string       `xml:"Name"`
	RecordList []RecordItem `xml:"RecordList>Item"`
	// PresetQuery response.
	PresetList []PresetItem `xml:"PresetList>Item"`
	// MediaStatus notify (121: a playback reached its end).
	NotifyType string `xml:"NotifyType"`
}

// CatalogItem is one entry of a Catalog response's DeviceList.
type CatalogItem struct {
	DeviceID     string `xml:"DeviceID"`
	Name         string `xml:"Name"`
	Manufacturer string `xml:"Manufacturer"`
	Model        string `xml:"Model"`
	ParentID     string `xml:"ParentID"`
	Parental     int    `xml:"Parental"`
	Status       string `xml:"Status"`
	PTZType      int    `xml:"Info>PTZType"`
}

// PresetItem is one entry of a PresetQuery response's PresetList.
type PresetItem struct {
	PresetID   int    `xml:"PresetID"`
	PresetName string `xml:"PresetName"`
}

// RecordItem is one entry of a RecordInfo response's RecordList.
type RecordItem struct {
	DeviceID   string `xml:"DeviceID"`
	Name       string `xml:"Name"`
	StartTime  string `xml:"StartTime"`
	EndTime    string `xml:"EndTime"`
	Secrecy    int    `xml:"Secrecy"`
	Type       string `xml:"Type"`
	FileSize   int64  `xml:"FileSize"`
	FilePath   string `xml:"FilePath"`
	RecorderID string `xml:"RecorderID"`
}

// ParseManscdp decodes a MANSCDP body. Devices declare GB2312 (sometimes
// GBK, sometimes nothing while sending GBK bytes); all are read as GB18030,
// the superset of both. A DTD or entity declaration is refused outright:
// MANSCDP has none, and an XML parser that expands them is how billion-
// laughs bodies hurt.
func ParseManscdp(body []byte) (Manscdp, error) {
	if len(body) > MaxManscdpBody {
		return Manscdp{}, fmt.Errorf("%w: %d bytes, more than %d", ErrManscdp, len(body), MaxManscdpBody)
	}
	if bytes.Contains(body, []byte("<!")) {
		return Manscdp{}, fmt.Errorf("%w: DTDs, entity declarations and CDATA are not MANSCDP", ErrManscdp)
	}
	dec := xml.NewDecoder(bytes.NewReader(body))
	dec.Strict = true
	dec.CharsetReader = func(charset string, input io.Reader) (io.Reader, error) {
		switch strings.ToLower(charset) {
		case "gb2312", "gbk", "gb18030", "gb-2312":
			return simplifiedchinese.GB18030.NewDecoder().Reader(input), nil
		case "utf-8", "utf8":
			return input, nil
		}
		return nil, fmt.Errorf("charset %q is not GB2312, GBK or UTF-8", charset)
	}
	var root struct {
		XMLName xml.Name
		Manscdp
	}
	if err := dec.Decode(&root); err != nil {
		return Manscdp{}, fmt.Errorf("%w: %w", ErrManscdp, err)
	}
	m := root.Manscdp
	m.Root = root.XMLName.Local
	switch m.Root {
	case "Query", "Response", "Notify", "Control":
	default:
		return Manscdp{}, fmt.Errorf("%w: root element %q is not Query, Response, Notify or Control", ErrManscdp, m.Root)
	}
	if m.CmdType == "" {
		return Manscdp{}, fmt.Errorf("%w: no CmdType", ErrManscdp)
	}
	if !ValidCode(m.DeviceID) {
		return Manscdp{}, fmt.Errorf("%w: DeviceID %q: %w", ErrManscdp, m.DeviceID, ErrDeviceID)
	}
	return m, nil
}
