package gb28181

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/svcplatform/svc/controlplane/store"
)

// updateDevice changes a device record with fn, which reports whether it
// changed anything; nothing is written otherwise.
func (s *Service) updateDevice(ctx context.Context, id DeviceID, fn func(d *Device) bool) error {
	_, err := store.Update(ctx, s.store, deviceKey(id), func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
		if kv == nil {
			return nil, nil, nil, fmt.Errorf("%w: %s", ErrDeviceNotFound, id)
		}
		d, err := store.Decode[Device](kv)
		if err != nil {
			return nil, nil, nil, err
		}
		if !fn(&d) {
			return nil, nil, nil, errUnchanged
		}
		val, err := json.Marshal(d)
		return val, nil, nil, err
	})
	if errors.Is(err, errUnchanged) {
		return nil
	}
	return err
}
