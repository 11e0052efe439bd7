package channels

import (
	"context"
	"encoding/json"
	"time"

	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// Asset transfer: the catalogue as a versioned document that another
// cluster (or this one, later) imports. Exports are masked: a source URL
// shows "***@" where credentials are stored and the credentials stay
// behind, so an exported document is safe to hand around.

// Transfer document identity.
const (
	TransferFormat  = "svc.channels.asset-transfer"
	TransferVersion = 1
)

// Import limits per document.
const (
	MaxImportGroups   = 500
	MaxImportChannels = 2000
)

// TransferDocument is what export writes and import reads.
type TransferDocument struct {
	Format     string            `json:"format"`
	Version    int               `json:"version"`
	ExportedAt time.Time         `json:"exportedAt"`
	Revision   int64             `json:"revision"`
	Groups     []TransferGroup   `json:"groups"`
	Channels   []TransferChannel `json:"channels"`
}

// TransferGroup is a group in a transfer document.
type TransferGroup struct {
	GroupKey    GroupKey `json:"groupKey"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
}

// TransferChannel is a channel's configuration in a transfer document;
// run-time state (desired and actual state, backoff) does not travel. Its
// source URL is masked where credentials are stored.
type TransferChannel struct {
	ChannelID ChannelID `json:"channelId"`
	Config
	HasSourceCredentials bool `json:"hasSourceCredentials"`
}

// catalogue is every group and channel read at one revision.
type catalogue struct {
	revision  int64
	groups    map[GroupKey]*Group
	groupRevs map[GroupKey]int64
	groupKeys []GroupKey
	channels  []*Channel
	byID      map[ChannelID]*Channel
	byName    map[string]*Channel
}

// readCatalogue reads groups and channels in one read transaction, so they
// agree with each other and with the revision.
func (s *Service) readCatalogue(ctx context.Context) (*catalogue, error) {
	cat := &catalogue{groups: map[GroupKey]*Group{}, groupRevs: map[GroupKey]int64{}, byID: map[ChannelID]*Channel{}, byName: map[string]*Channel{}}
	err := s.Reader.View(ctx, func(v query.View) error {
		cat.revision = v.Revision()
		return forEachKV(v, []string{GroupPrefix, ChannelPrefix}, func(kv *store.KeyValue) error {
			if len(kv.Key) > len(GroupPrefix) && kv.Key[:len(GroupPrefix)] == GroupPrefix {
				g, err := store.Decode[Group](kv)
				if err != nil {
					return err
				}
				cat.groups[g.GroupKey], cat.groupRevs[g.GroupKey] = &g, kv.ModRevision
				cat.groupKeys = append(cat.groupKeys, g.GroupKey)
				return nil
			}
			ch, err := decodeChannel(kv)
			if err != nil {
				return err
			}
			cat.channels = append(cat.channels, ch)
			cat.byID[ch.ChannelID] = ch
			cat.byName[streamNameKey(ch.Vhost, ch.App, ch.Stream)] = ch
			return nil
		})
	})
	return cat, err
}

func forEachKV(v query.View, prefixes []string, fn func(*store.KeyValue) error) error {
	for _, p := range prefixes {
		err := v.Scan(p, func(r query.Row) error {
			return fn(&store.KeyValue{Key: r.Key, Value: r.Value, ModRevision: r.ModRevision})
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Export writes the catalogue as a transfer document.
func (s *Service) Export(ctx context.Context) (*TransferDocument, error) {
	cat, err := s.readCatalogue(ctx)
	if err != nil {
		return nil, err
	}
	doc := &TransferDocument{Format: TransferFormat, Version: TransferVersion, ExportedAt: s.now(), Revision: cat.revision,
		Groups: []TransferGroup{}, Channels: []TransferChannel{}}
	for _, k := range cat.groupKeys {
		g := cat.groups[k]
		doc.Groups = append(doc.Groups, TransferGroup{GroupKey: g.GroupKey, Name: g.Name, Description: g.Description})
	}
	for _, c := range cat.channels {
		doc.Channels = append(doc.Channels, toTransfer(c))
	}
	return doc, nil
}

func toTransfer(c *Channel) TransferChannel {
	t := TransferChannel{ChannelID: c.ChannelID, Config: c.Config, HasSourceCredentials: c.HasCredentials()}
	t.SourceURL = c.MaskedSourceURL()
	return t
}

// UnmarshalJSON gives fields a hand-written document leaves out the same
// defaults as creating a channel.
func (t *TransferChannel) UnmarshalJSON(b []byte) error {
	type plain TransferChannel
	p := plain{Config: defaultConfig()}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*t = TransferChannel(p)
	return nil
}
