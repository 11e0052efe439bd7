package gb28181

import (
	"context"
	"fmt"
	"sort"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/channels"
)

// Catalog limits.
const (
	// MaxCatalogChannels bounds the SumNum a device may announce.
	MaxCatalogChannels = 10_000
	// catalogBatch is how many channels go into one Txn.
	catalogBatch = 200
	// CatalogApp is the app of every GB28181 channel's stream; the stream
	// is <deviceId>_<channelId>.
	CatalogApp = "rtp"
)

// ChannelStore is what catalog sync needs of the channel catalogue;
// *channels.Service is one.
type ChannelStore interface {
	List(ctx context.Context, f channels.Filter) ([]channels.Channel, int64, error)
	Import(ctx context.Context, a channels.Actor, doc *channels.TransferDocument, opt channels.ImportOptions) (*channels.ImportResult, error)
}

// catalogRun collects the pages of one Catalog response.
type catalogRun struct {
	sn     int64
	sumNum int
	items  map[string]CatalogItem
	timer  *time.Timer
}

// catalogPage adds one Catalog response page; the run is synced once
// SumNum items arrived, or CatalogTimeout after the last page with what
// came (a device that announces more than it sends).
func (s *Service) catalogPage(id DeviceID, m Manscdp) {
	if m.SumNum < 0 || m.SumNum > MaxCatalogChannels {
		s.log.Info("GB28181 catalog refused", zap.String("deviceId", string(id)), zap.Int("sumNum", m.SumNum))
		return
	}
	s.mu.Lock()
	run := s.catalogs[id]
	if run == nil || run.sn != m.SN {
		if run != nil {
			run.timer.Stop()
		}
		run = &catalogRun{sn: m.SN, sumNum: m.SumNum, items: map[string]CatalogItem{}}
		run.timer = time.AfterFunc(s.cfg.CatalogTimeout, func() { s.finishCatalog(id, run, "timeout") })
		s.catalogs[id] = run
	}
	for _, it := range m.DeviceList {
		if len(run.items) >= run.sumNum {
			break // more than announced: ignored
		}
		if ValidCode(it.DeviceID) {
			run.items[it.DeviceID] = it
		}
	}
	done := len(run.items) >= run.sumNum
	if !done {
		run.timer.Reset(s.cfg.CatalogTimeout)
	}
	s.mu.Unlock()
	if done {
		s.finishCatalog(id, run, "complete")
	}
}

// finishCatalog syncs a run once.
func (s *Service) finishCatalog(id DeviceID, run *catalogRun, why string) {
	s.mu.Lock()
	if s.catalogs[id] != run {
		s.mu.Unlock()
		return
	}
	delete(s.catalogs, id)
	run.timer.Stop()
	items := make([]CatalogItem, 0, len(run.items))
	for _, it := range run.items {
		items = append(items, it)
	}
	s.mu.Unlock()
	if why != "complete" {
		s.log.Info("GB28181 catalog incomplete", zap.String("deviceId", string(id)), zap.Int("sumNum", run.sumNum), zap.Int("received", len(items)))
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
		defer cancel()
		created, updated, err := s.syncCatalog(ctx, id, items)
		if err != nil {
			s.log.Warn("GB28181 catalog sync failed", zap.String("deviceId", string(id)), zap.Error(err))
			return
		}
		s.log.Info("GB28181 catalog synced", zap.String("deviceId", string(id)), zap.Int("items", len(items)),
			zap.Int("created", created), zap.Int("updated", updated))
		s.catalogSynced(id, len(items))
	}()
}

// syncCatalog writes a device's channels into the channel catalogue in
// batches of catalogBatch per Txn. A channel already there keeps its
// settings; only what the device reports (name, PTZ) is refreshed.
func (s *Service) syncCatalog(ctx context.Context, id DeviceID, items []CatalogItem) (created, updated int, err error) {
	if s.channels == nil {
		return 0, 0, nil
	}
	sort.Slice(items, func(i, j int) bool { return items[i].DeviceID < items[j].DeviceID })
	existing := map[string]channels.Channel{}
	for page := 1; ; page++ {
		rows, total, err := s.channels.List(ctx, channels.Filter{Protocol: channels.ProtocolGB28181, DeviceID: string(id), Page: page, PageSize: 1000})
		if err != nil {
			return 0, 0, err
		}
		for _, ch := range rows {
			existing[ch.DeviceChannelID] = ch
		}
		if int64(page*1000) >= total || len(rows) == 0 {
			break
		}
	}
	actor := channels.Actor{Type: "gb28181", ID: string(id)}
	for start := 0; start < len(items); start += catalogBatch {
		doc := &channels.TransferDocument{Format: channels.TransferFormat, Version: channels.TransferVersion, ExportedAt: s.now().UTC()}
		for _, it := range items[start:min(start+catalogBatch, len(items))] {
			doc.Channels = append(doc.Channels, catalogChannel(id, it, existing[it.DeviceID]))
		}
		res, err := s.channels.Import(ctx, actor, doc, channels.ImportOptions{Activation: channels.ActivationActive})
		if err != nil {
			return created, updated, fmt.Errorf("channels %d-%d: %w", start, start+len(doc.Channels), err)
		}
		created, updated = created+res.Created, updated+res.Updated
	}
	return created, updated, nil
}

// catalogChannel is a catalog item as a channel: a new one with the
// platform's defaults, an existing one with only the device's fields
// changed.
func catalogChannel(id DeviceID, it CatalogItem, have channels.Channel) channels.TransferChannel {
	name := it.Name
	if name == "" {
		name = it.DeviceID
	}
	if len([]rune(name)) > 128 {
		name = string([]rune(name)[:128])
	}
	if have.ChannelID != "" {
		tc := channels.TransferChannel{ChannelID: have.ChannelID, Config: have.Config}
		tc.Name = name
		tc.HasPTZ = it.PTZType == 1 || it.PTZType == 4 || have.HasPTZ
		return tc
	}
	return channels.TransferChannel{Config: channels.Config{Name: name, Protocol: channels.ProtocolGB28181, Vhost: channels.DefaultVhost,
		App: CatalogApp, Stream: string(id) + "_" + it.DeviceID, DeviceID: string(id), DeviceChannelID: it.DeviceID,
		RTSPTransport: channels.TransportAuto, Enabled: true, HasAudio: true, HasPTZ: it.PTZType == 1 || it.PTZType == 4}}
}

// catalogSynced records the channel count on the device record (a write
// only when it changed).
func (s *Service) catalogSynced(id DeviceID, n int) {
	ctx, cancel := context.WithTimeout(s.ctx, writeTimeout)
	defer cancel()
	if err := s.updateDevice(ctx, id, func(d *Device) bool {
		if d.Channels == n {
			return false
		}
		d.Channels = n
		return true
	}); err != nil {
		s.log.Warn("GB28181 channel count not recorded", zap.String("deviceId", string(id)), zap.Error(err))
	}
}
