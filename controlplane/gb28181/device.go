package gb28181

import (
	"context"
	"fmt"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// DeviceID is a device's 20-digit GB28181 code.
type DeviceID string

// Status is a device's presence. Values are append-only.
type Status string

// Presence states.
const (
	StatusOnline  Status = "online"
	StatusOffline Status = "offline"
	// StatusUnregistered is what an event reports for a device without a
	// record (an auth failure of an unknown device, an unregister).
	StatusUnregistered Status = "unregistered"
)

// DirectionInbound is the direction of a device that registers with the
// platform (the only one today; a cascaded upper platform is outbound).
const DirectionInbound = "inbound"

// DevicePrefix holds one record per registered device.
const DevicePrefix = "/gb28181/devices/"

// Device is the replicated record of a registered device. It changes only
// on a state transition or when the device's transport changes (another
// node, another address behind NAT), never on a refresh or keep-alive.
type Device struct {
	DeviceID  DeviceID `json:"deviceId"`
	Name      *string  `json:"name"`
	Direction string   `json:"direction"`
	Status    Status   `json:"status"`
	// Transport is "udp" or "tcp"; RemoteAddr the device's SIP address as
	// seen by NodeID, the control node that holds its transport and sends
	// it commands.
	Transport  string `json:"transport"`
	RemoteAddr string `json:"remoteAddr"`
	NodeID     string `json:"nodeId"`
	// Expires is the registration's lifetime in seconds.
	Expires int `json:"expires"`
	// KeepaliveIntervalSec and KeepaliveCount are the device's own offline
	// window when it reports one (DeviceConfig BasicParam); 0 uses the
	// platform's.
	KeepaliveIntervalSec int `json:"keepaliveIntervalSec,omitempty"`
	KeepaliveCount       int `json:"keepaliveCount,omitempty"`
	// Manufacturer and Model come from DeviceInfo.
	Manufacturer string    `json:"manufacturer,omitempty"`
	Model        string    `json:"model,omitempty"`
	Channels     int       `json:"channels"`
	RegisteredAt time.Time `json:"registeredAt"`
	// StatusChangedAt is when Status last changed.
	StatusChangedAt time.Time `json:"statusChangedAt"`
}

func deviceKey(id DeviceID) string { return DevicePrefix + string(id) }

// DeviceIndex lets the device list filter by status without reading and
// decoding every record: with 2,000 devices a list of the online ones read
// all 2,000 records. The status has no search tree of its own (NoIndex):
// a registration's Txn then writes one more page (the index row), not two,
// and the filter scans the small index rows in key order instead, which
// for tens of thousands of devices is still a fraction of a millisecond a
// page. node_id lets the leader's stale-holder sweep read only the online
// devices other nodes hold (none on a single node) instead of decoding
// every record every few seconds. Both change only on a transition, so a
// keep-alive costs the index nothing.
var DeviceIndex = query.Index{Name: "gb28181_devices", Prefix: DevicePrefix, Columns: []query.Column{
	{Name: "status", Type: query.Text, Path: "$.status", NoIndex: true},
	{Name: "node_id", Type: query.Text, Path: "$.nodeId", NoIndex: true},
}}

// DevicePage is one page (1-based) of the device records, ordered by id,
// of one status when status is set, and how many match.
func DevicePage(ctx context.Context, r query.Reader, status Status, page, size int) ([]Device, int64, error) {
	var where query.Where
	where.EqIfSet("status", string(status))
	return query.Page(ctx, r, query.Query{Index: DeviceIndex.Name, Where: where}, page, size, query.JSON[Device])
}

// GetDevice reads one device record.
func GetDevice(ctx context.Context, s store.Store, id DeviceID) (*Device, error) {
	kv, _, err := store.Get(ctx, s, deviceKey(id), store.Local)
	if err != nil {
		return nil, err
	}
	if kv == nil {
		return nil, fmt.Errorf("%w: %s", ErrDeviceNotFound, id)
	}
	d, err := store.Decode[Device](kv)
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// ListDevices reads every device record, ordered by id.
func ListDevices(ctx context.Context, s store.Store) ([]Device, error) {
	resp, err := s.Range(ctx, DevicePrefix, store.RangeOptions{End: store.PrefixEnd(DevicePrefix)})
	if err != nil {
		return nil, err
	}
	out := make([]Device, 0, len(resp.KVs))
	for _, kv := range resp.KVs {
		d, err := store.Decode[Device](kv)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", kv.Key, err)
		}
		out = append(out, d)
	}
	return out, nil
}
