package gb28181

import (
	"context"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/test/testkit"
)

func TestSIPpCatalogOfAThousandChannelsBecomesChannelRecords(t *testing.T) {
	s, _ := testService(t, time.Minute, 3, func(c *Config) { c.CatalogOnRegister = true })
	const sum, per = 1000, 50
	var pages []string
	for p := 0; p*per < sum; p++ {
		pages = append(pages, catalogBody(testDeviceID, 7, sum, p, per))
	}
	dev := device{ID: testDeviceID, Password: testPassword, Transport: "udp", Port: freeUDPPort(t)}
	// The platform's Catalog query is answered by the out-of-call scenario
	// while the device pauses; then it sends its catalog in 20 pages, five
	// per SIPp run (SIPp refuses scenario files much over 64 KiB).
	log := dev.run(t, s, scenarioArgs{Register: true, Expires: 3600, PauseMs: 1000, Messages: pages[:5], ExpectMessage: 200})
	for p := 5; p < len(pages); p += 5 {
		dev.run(t, s, scenarioArgs{Messages: pages[p:min(p+5, len(pages))], ExpectMessage: 200})
	}
	chans := s.channels.(*channels.Service)
	// The wait counts (a page of one) rather than reading 1,000 rows per
	// poll, which competed with the sync's own writes; a loaded 2-core
	// machine with -race takes tens of seconds for the five batches.
	testkit.Eventually(t, 2*time.Minute, "1,000 channel records", func() bool {
		_, total, err := chans.List(context.Background(), channels.Filter{DeviceID: testDeviceID, PageSize: 1})
		return err == nil && total == sum
	})
	rows, _, err := chans.List(context.Background(), channels.Filter{DeviceID: testDeviceID, PageSize: 1000})
	if err != nil || len(rows) != sum {
		t.Fatalf("listing the %d channels: %d rows, %v", sum, len(rows), err)
	}
	byID := map[string]channels.Channel{}
	for _, ch := range rows {
		byID[ch.DeviceChannelID] = ch
	}
	for _, i := range []int{0, 1, 499, 999} {
		ch := byID[catalogChannelID(i)]
		if ch.Name != catalogName(i) || ch.Protocol != channels.ProtocolGB28181 || ch.App != CatalogApp ||
			ch.Stream != testDeviceID+"_"+catalogChannelID(i) || ch.HasPTZ != (1+i%3 == 1) {
			t.Fatalf("channel %d: %+v", i, ch)
		}
	}
	testkit.Eventually(t, 20*time.Second, "the device's channel count", func() bool {
		d, err := GetDevice(context.Background(), s.store, testDeviceID)
		return err == nil && d.Channels == sum
	})
	if !containsAll(log, "MESSAGE sip:"+testDeviceID) {
		t.Fatalf("the platform's catalog query never reached the device:\n%s", lastLines(log, 40))
	}
	// The same catalog again changes nothing: renamed channels keep their
	// settings, unchanged ones are skipped.
	created, updated, err := s.syncCatalog(context.Background(), testDeviceID, []CatalogItem{{DeviceID: catalogChannelID(0), Name: catalogName(0)}})
	if err != nil || created != 0 || updated != 0 {
		t.Fatalf("resync: created %d updated %d, %v", created, updated, err)
	}
}

func TestCatalogSumNumLargerThanSentSyncsWhatCame(t *testing.T) {
	s, _ := testService(t, time.Minute, 3, func(c *Config) { c.CatalogTimeout = time.Second })
	dev := device{ID: testDeviceID, Password: testPassword, Transport: "tcp", Port: freeUDPPort(t)}
	// SumNum 50, but only 2 pages of 10 come.
	dev.run(t, s, scenarioArgs{Register: true, Expires: 3600, Messages: []string{catalogBody(testDeviceID, 3, 50, 0, 10), catalogBody(testDeviceID, 3, 50, 1, 10)},
		ExpectMessage: 200})
	chans := s.channels.(*channels.Service)
	testkit.Eventually(t, 30*time.Second, "the 20 channels that came", func() bool {
		_, total, err := chans.List(context.Background(), channels.Filter{DeviceID: testDeviceID})
		return err == nil && total == 20
	})
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !contains(s, sub) {
			return false
		}
	}
	return true
}

func contains(s, sub string) bool { return len(sub) == 0 || indexOf(s, sub) >= 0 }

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}
