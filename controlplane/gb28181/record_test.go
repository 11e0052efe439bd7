package gb28181

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/testkit"
)

const recordChannelID = "34020000001310000001"

// recordBody is page `page` (from 0) of a RecordInfo response of sum
// recordings, per a page: one an hour from 2026-11-01 00:00 local time.
func recordBody(sn int64, sum, page, per int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<?xml version=\"1.0\" encoding=\"GB2312\"?>\n<Response>\n<CmdType>RecordInfo</CmdType>\n<SN>%d</SN>\n", sn)
	fmt.Fprintf(&b, "<DeviceID>%s</DeviceID>\n<Name>大门</Name>\n<SumNum>%d</SumNum>\n<RecordList Num=\"%d\">\n", recordChannelID, sum, per)
	day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.Local)
	for i := page * per; i < min(sum, (page+1)*per); i++ {
		start := day.Add(time.Duration(i) * time.Hour)
		fmt.Fprintf(&b, "<Item>\n<DeviceID>%s</DeviceID>\n<Name>录像%d</Name>\n<FilePath>/mnt/sd/rec/%d.ps</FilePath>\n<Address>二楼</Address>\n"+
			"<StartTime>%s</StartTime>\n<EndTime>%s</EndTime>\n<Secrecy>0</Secrecy>\n<Type>time</Type>\n<RecorderID>%s</RecorderID>\n<FileSize>1048576</FileSize>\n</Item>\n",
			recordChannelID, i, i, start.Format(manscdpTime), start.Add(50*time.Minute).Format(manscdpTime), testDeviceID)
	}
	b.WriteString("</RecordList>\n</Response>")
	return b.String()
}

// recordQueryWhileRegistered registers a SIPp device that, after a pause,
// sends the given RecordInfo pages; the query is made during the pause
// (it is the service's first MANSCDP command, so its SN is 1).
func recordQueryWhileRegistered(t *testing.T, s *Service, idle time.Duration, pages ...string) (*RecordQuery, <-chan sippResult) {
	t.Helper()
	dev := device{ID: testDeviceID, Password: testPassword, Transport: "udp", Port: freeUDPPort(t)}
	done := dev.start(t, s, scenarioArgs{Register: true, Expires: 3600, PauseMs: 3000, Messages: pages, ExpectMessage: 200})
	testkit.Eventually(t, 20*time.Second, "the device registered", func() bool { return s.registered(testDeviceID) })
	day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.Local)
	q, err := s.StartRecordQuery(context.Background(), testDeviceID, recordChannelID, day, day.Add(24*time.Hour), idle)
	if err != nil {
		t.Fatal(err)
	}
	if q.SN != 1 || q.State != QueryRunning {
		t.Fatalf("query %+v", q)
	}
	return q, done
}

func TestSIPpRecordQueryAnsweredInThreePages(t *testing.T) {
	s, _ := testService(t, time.Minute, 3)
	q, done := recordQueryWhileRegistered(t, s, 10*time.Second, recordBody(1, 7, 0, 3), recordBody(1, 7, 1, 3), recordBody(1, 7, 2, 3))
	var got *RecordQuery
	testkit.Eventually(t, 30*time.Second, "the query complete", func() bool {
		var err error
		got, err = GetRecordQuery(context.Background(), s.store, q.TaskID)
		return err == nil && got.State != QueryRunning
	})
	if r := <-done; r.err != nil {
		t.Fatal(r.err)
	} else if !strings.Contains(r.log, "<CmdType>RecordInfo</CmdType>") {
		t.Fatalf("the query never reached the device:\n%s", lastLines(r.log, 40))
	}
	if got.State != QuerySucceeded || got.SumNum != 7 || len(got.Records) != 7 || got.FinishedAt == nil {
		t.Fatalf("query %+v", got)
	}
	day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.Local)
	for i, r := range got.Records {
		if r.RecordID != fmt.Sprint(i+1) || !r.StartTime.Equal(day.Add(time.Duration(i)*time.Hour)) || r.EndTime.Sub(r.StartTime) != 50*time.Minute ||
			r.Name != fmt.Sprintf("录像%d", i) || r.Type != "time" {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
}

func TestRecordQuerySumNumLargerThanSentEndsIncomplete(t *testing.T) {
	s, _ := testService(t, time.Minute, 3)
	// SumNum 9, two pages of 3 come, the third never does; the second page
	// also comes twice and counts once.
	q, done := recordQueryWhileRegistered(t, s, 5*time.Second, recordBody(1, 9, 0, 3), recordBody(1, 9, 1, 3), recordBody(1, 9, 1, 3))
	if r := <-done; r.err != nil {
		t.Fatal(r.err)
	}
	var got *RecordQuery
	testkit.Eventually(t, 30*time.Second, "the query ended", func() bool {
		var err error
		got, err = GetRecordQuery(context.Background(), s.store, q.TaskID)
		return err == nil && got.State != QueryRunning
	})
	if got.State != QueryIncomplete || got.SumNum != 9 || len(got.Records) != 6 {
		t.Fatalf("query %+v", got)
	}
}

func TestRecordQueryRefusesBadInput(t *testing.T) {
	s, _ := testService(t, time.Minute, 3)
	day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.Local)
	for _, c := range []struct {
		dev, ch    string
		start, end time.Time
		want       error
	}{
		{"3402000000132000000", recordChannelID, day, day.Add(time.Hour), ErrInvalid},
		{testDeviceID, "not-a-code", day, day.Add(time.Hour), ErrInvalid},
		{testDeviceID, recordChannelID, day, day, ErrInvalid},
		{testDeviceID, recordChannelID, day, day.Add(40 * 24 * time.Hour), ErrInvalid},
		{testDeviceID, recordChannelID, day, day.Add(time.Hour), ErrDeviceOffline},
	} {
		if _, err := s.StartRecordQuery(context.Background(), DeviceID(c.dev), c.ch, c.start, c.end, 0); !errors.Is(err, c.want) {
			t.Errorf("%s %s %s-%s: %v, want %v", c.dev, c.ch, c.start, c.end, err, c.want)
		}
	}
	if _, err := GetRecordQuery(context.Background(), s.store, "nope"); !errors.Is(err, ErrRecordQueryNotFound) {
		t.Fatalf("unknown task: %v", err)
	}
}
