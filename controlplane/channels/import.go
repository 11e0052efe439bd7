package channels

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/store"
)

// Import actions of an item.
const (
	ImportCreate = "create"
	ImportUpdate = "update"
	ImportSkip   = "skip"
	ImportError  = "error"
)

// ImportItem says what importing one group or channel does, and why.
type ImportItem struct {
	Kind      string    `json:"kind"` // group or channel
	Key       string    `json:"key"`  // group key, or vhost/app/stream
	ChannelID ChannelID `json:"channelId,omitempty"`
	Action    string    `json:"action"`
	Reason    string    `json:"reason"`
}

// ImportResult is the plan (preview) or what was applied (confirm).
type ImportResult struct {
	Preview  bool         `json:"preview"`
	Applied  bool         `json:"applied"`
	Created  int          `json:"created"`
	Updated  int          `json:"updated"`
	Skipped  int          `json:"skipped"`
	Failed   int          `json:"failed"`
	Items    []ImportItem `json:"items"`
	Revision int64        `json:"revision"`
}

// ImportOptions choose how to import.
type ImportOptions struct {
	// Preview plans without writing anything.
	Preview bool
	// Activation of new channels: Pending (the default) puts them in the
	// pending-activation pool for review; Active makes them usable at once.
	Activation Activation
}

// ErrImportRejected: 409 import_rejected; a confirm whose plan has errors
// applies nothing.
var ErrImportRejected = fault.New(fault.Conflict, "import_rejected", "invalid channel request: the import has invalid items and nothing was applied")

// plan is an import worked out against one catalogue.
type plan struct {
	result ImportResult
	cmps   []store.Compare
	ops    []store.Op
}

func (p *plan) item(it ImportItem) {
	p.result.Items = append(p.result.Items, it)
	switch it.Action {
	case ImportCreate:
		p.result.Created++
	case ImportUpdate:
		p.result.Updated++
	case ImportSkip:
		p.result.Skipped++
	case ImportError:
		p.result.Failed++
	}
}

func checkDocument(doc *TransferDocument) error {
	if doc.Format != TransferFormat {
		return fmt.Errorf("%w: format must be %q", ErrInvalid, TransferFormat)
	}
	if doc.Version != TransferVersion {
		return fmt.Errorf("%w: version %d is not supported; this server reads version %d", ErrInvalid, doc.Version, TransferVersion)
	}
	if len(doc.Groups) > MaxImportGroups || len(doc.Channels) > MaxImportChannels {
		return fmt.Errorf("%w: a document holds at most %d groups and %d channels; split it", ErrInvalid, MaxImportGroups, MaxImportChannels)
	}
	return nil
}

// Import previews or applies a transfer document. A confirm is
// all-or-nothing for the document: one Txn guarded by the mod revision of
// every record it read, so a concurrent change makes it plan again, and a
// plan with any invalid item applies nothing. Items are matched by channel
// id, then by vhost/app/stream; unchanged items are skipped, so confirming
// the same document twice changes nothing the second time.
func (s *Service) Import(ctx context.Context, a Actor, doc *TransferDocument, opt ImportOptions) (*ImportResult, error) {
	if err := checkDocument(doc); err != nil {
		return nil, err
	}
	if opt.Activation == "" {
		opt.Activation = ActivationPending
	}
	if opt.Activation != ActivationPending && opt.Activation != ActivationActive {
		return nil, fmt.Errorf("%w: activationState must be Pending or Active", ErrInvalid)
	}
	for attempt := 0; attempt < maxAttempts; attempt++ {
		cat, err := s.readCatalogue(ctx)
		if err != nil {
			return nil, err
		}
		p, err := s.plan(ctx, a, cat, doc, opt)
		if err != nil {
			return nil, err
		}
		p.result.Preview, p.result.Revision = opt.Preview, cat.revision
		if opt.Preview {
			return &p.result, nil
		}
		if p.result.Failed > 0 {
			return &p.result, ErrImportRejected
		}
		if len(p.ops) == 0 {
			p.result.Applied = true
			return &p.result, nil
		}
		resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: p.cmps, Then: p.ops})
		if err != nil {
			return nil, err
		}
		if resp.Succeeded {
			p.result.Applied, p.result.Revision = true, resp.Header.Revision
			return &p.result, nil
		}
		if err := s.settle(ctx, resp.Header.Revision, attempt); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: the catalogue kept changing during the import", ErrContended)
}

func (s *Service) plan(ctx context.Context, a Actor, cat *catalogue, doc *TransferDocument, opt ImportOptions) (*plan, error) {
	p := &plan{result: ImportResult{Items: []ImportItem{}}}
	c := &change{s: s, ctx: ctx, actor: a, now: s.now()}
	known := map[GroupKey]*Group{}
	for k, g := range cat.groups {
		if !g.Deleting {
			known[k] = g
		}
	}
	seen := map[GroupKey]bool{}
	for _, tg := range doc.Groups {
		it := ImportItem{Kind: "group", Key: string(tg.GroupKey)}
		g, exists := cat.groups[tg.GroupKey]
		switch err := checkGroup(tg.GroupKey, tg.Name, tg.Description); {
		case err != nil:
			it.Action, it.Reason = ImportError, strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": ")
		case seen[tg.GroupKey]:
			it.Action, it.Reason = ImportError, "the document lists this group twice"
		case exists && !g.Deleting && g.Name == tg.Name && g.Description == tg.Description:
			it.Action, it.Reason = ImportSkip, "unchanged"
		case exists:
			it.Action, it.Reason = ImportUpdate, "name or description differs"
			ng := *g
			ng.Name, ng.Description, ng.UpdatedAt, ng.UpdatedBy, ng.Deleting = tg.Name, tg.Description, c.now, who(a), false
			known[tg.GroupKey] = &ng
		default:
			it.Action, it.Reason = ImportCreate, "new group"
			known[tg.GroupKey] = &Group{GroupKey: tg.GroupKey, Name: tg.Name, Description: tg.Description,
				CreatedAt: c.now, CreatedBy: who(a), UpdatedAt: c.now, UpdatedBy: who(a)}
		}
		seen[tg.GroupKey] = true
		p.item(it)
	}
	claimed := map[string]ChannelID{}
	joined := map[GroupKey]bool{}
	for i := range doc.Channels {
		it, err := s.planChannel(c, cat, known, claimed, joined, &doc.Channels[i], opt)
		if err != nil {
			return nil, err
		}
		p.item(it)
	}
	// Groups: new and changed ones are written, and every group a channel
	// joins is compared, each at the revision it was read at (0, absent,
	// for new ones), so a concurrent deletion makes the import plan again.
	for k, g := range known {
		orig, existed := cat.groups[k]
		write := !existed || g != orig
		if !write && !joined[k] {
			continue
		}
		p.cmps = append(p.cmps, store.ModRevisionIs(groupKey(k), cat.groupRevs[k]))
		if write {
			val, err := json.Marshal(g)
			if err != nil {
				return nil, err
			}
			p.ops = append(p.ops, store.Put(groupKey(k), val))
		}
	}
	p.cmps = append(p.cmps, c.cmps...)
	p.ops = append(p.ops, c.ops...)
	return p, nil
}

// planChannel works out one channel of the document and adds its writes
// to c.
func (s *Service) planChannel(
	c *change,
	cat *catalogue,
	groups map[GroupKey]*Group,
	claimed map[string]ChannelID,
	joined map[GroupKey]bool,
	tc *TransferChannel,
	opt ImportOptions,
) (ImportItem, error) {
	vhost := tc.Vhost
	if vhost == "" {
		vhost = DefaultVhost
	}
	name := streamNameKey(vhost, tc.App, tc.Stream)
	it := ImportItem{Kind: "channel", Key: vhost + "/" + tc.App + "/" + tc.Stream}
	fail := func(reason string) (ImportItem, error) {
		it.Action, it.Reason = ImportError, reason
		return it, nil
	}
	existing := cat.byID[tc.ChannelID]
	if existing == nil {
		existing = cat.byName[name]
	}
	if tc.GroupKey != "" && groups[tc.GroupKey] == nil {
		return fail(fmt.Sprintf("groupKey %q names no group here or in the document", tc.GroupKey))
	}
	in, note, err := transferInput(tc, existing)
	if err != nil {
		return fail(strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": "))
	}
	var ch Channel
	if existing != nil {
		ch = *existing
	} else {
		id := tc.ChannelID
		if _, err := uuid.Parse(string(id)); err != nil || cat.byID[id] != nil {
			u, err := uuid.NewV7()
			if err != nil {
				return it, err
			}
			id = ChannelID(u.String())
		}
		ch = Channel{ChannelID: id, Config: defaultConfig(), Activation: opt.Activation,
			DesiredState: DesiredStopped, ActualState: ActualOffline, ActualStateAt: c.now,
			CreatedAt: c.now, CreatedBy: who(c.actor), UpdatedAt: c.now, UpdatedBy: who(c.actor)}
	}
	it.ChannelID = ch.ChannelID
	if owner, ok := claimed[name]; ok && owner != ch.ChannelID {
		return fail("the document lists this vhost/app/stream twice")
	}
	if owner := cat.byName[name]; owner != nil && owner.ChannelID != ch.ChannelID {
		return fail(fmt.Sprintf("vhost/app/stream belongs to channel %s", owner.ChannelID))
	}
	claimed[name] = ch.ChannelID
	old := ch
	changed, err := s.apply(&ch, in, existing == nil)
	if err != nil {
		return fail(strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": "))
	}
	if existing != nil && len(changed) == 0 {
		it.Action, it.Reason = ImportSkip, "unchanged"
		return it, nil
	}
	key := channelKey(ch.ChannelID)
	if existing != nil {
		if old.Running() {
			for _, f := range changed {
				switch f {
				case "protocol", "sourceUrl", "sourceCredentials", "vhost", "app", "stream", "enabled":
					return fail(fmt.Sprintf("%s cannot change while the channel runs; stop it first", f))
				}
			}
		}
		c.cmps = append(c.cmps, store.ModRevisionIs(key, existing.Revision))
		if old.Vhost != ch.Vhost || old.App != ch.App || old.Stream != ch.Stream {
			c.releaseName(old.Vhost, old.App, old.Stream)
			c.claimName(ch.ChannelID, ch.Vhost, ch.App, ch.Stream)
		}
		if ch.GroupKey != old.GroupKey && ch.GroupKey != "" {
			joined[ch.GroupKey] = true
		}
		ch.UpdatedAt, ch.UpdatedBy = c.now, who(c.actor)
		it.Action, it.Reason = ImportUpdate, "changes "+strings.Join(changed, ", ")
	} else {
		c.cmps = append(c.cmps, store.Absent(key))
		c.claimName(ch.ChannelID, ch.Vhost, ch.App, ch.Stream)
		if ch.GroupKey != "" {
			joined[ch.GroupKey] = true
		}
		it.Action, it.Reason = ImportCreate, "new channel, "+string(ch.Activation)
	}
	if note != "" {
		it.Reason += "; " + note
	}
	val, err := json.Marshal(ch)
	if err != nil {
		return it, err
	}
	c.ops = append(c.ops, store.Put(key, val))
	return it, c.log(ch.ChannelID, LogConfig, "channel.imported", "", "", it.Action+": "+it.Reason, "")
}

// transferInput turns a document entry into an Input. A masked source URL
// keeps the credentials of the matching channel; a new channel gets the URL
// without them, and the note says so.
func transferInput(tc *TransferChannel, existing *Channel) (Input, string, error) {
	note := ""
	src, err := splitSource(tc.SourceURL)
	if err != nil {
		return Input{}, "", err
	}
	in := tc.input()
	if src.keeps() && (existing == nil || !existing.HasCredentials()) {
		bare := withoutMasks(src.bare)
		in.SourceURL, note = &bare, "source credentials are not exported; set them with PUT /api/v2/channels/{channelId}"
	}
	if *in.RTSPTransport == "" {
		*in.RTSPTransport = TransportAuto
	}
	return in, note, nil
}

// input is an Input that sets every field of a copy of c.
func (c Config) input() Input {
	return Input{Name: &c.Name, Description: &c.Description, Protocol: &c.Protocol, SourceURL: &c.SourceURL, RTSPTransport: &c.RTSPTransport,
		Vhost: &c.Vhost, App: &c.App, Stream: &c.Stream, MediaServerID: &c.MediaServerID, DeviceID: &c.DeviceID,
		DeviceChannelID: &c.DeviceChannelID, GroupKey: &c.GroupKey, Enabled: &c.Enabled, AutoVideo: &c.AutoVideo,
		AutoRecord: &c.AutoRecord, HasAudio: &c.HasAudio, NoPlayerBreak: &c.NoPlayerBreak, HasPTZ: &c.HasPTZ,
		IsShareChannel: &c.IsShareChannel, AllowBasicAuthOverPlainRTSP: &c.AllowBasicAuthOverPlainRTSP}
}
