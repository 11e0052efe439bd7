// Command recordbench measures the recording index on one control node
// through its HTTP API on loopback: how long `GET /api/v2/recording/files`
// takes to find one stream's (or one channel's) files in an hour's range
// when the index holds a million files, and what the last page of a long
// listing costs against its first. The files are written straight into the
// store as the on_record_mp4 hook would index them (the measured part is
// the listing, not the indexing). It writes its section of
// docs/benchmarks.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/recording"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/test/bench/benchdoc"
)

func main() {
	out := flag.String("out", "docs/benchmarks.md", "markdown file to write the section to")
	streams := flag.Int("streams", 500, "recorded streams")
	perStream := flag.Int("files", 2000, "one-minute files per stream")
	queries := flag.Int("queries", 300, "listing requests per case")
	flag.Parse()
	if err := run(*out, *streams, *perStream, *queries); err != nil {
		fmt.Fprintln(os.Stderr, "recordbench:", err)
		os.Exit(1)
	}
}

var base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func run(outPath string, streams, perStream, queries int) error {
	ctx := context.Background()
	s, tok, stop, err := benchdoc.Node(ctx, "recordbench", false, "recordings.view")
	if err != nil {
		return err
	}
	defer stop()
	t0 := time.Now()
	for m := 0; m < perStream; m++ {
		var ops []store.Op
		for st := 0; st < streams; st++ {
			start := base.Add(time.Duration(m) * time.Minute)
			id, _ := uuid.NewV7()
			f := recording.File{FileID: id.String(), MediaServerID: fmt.Sprintf("media-%d", st%8), NodeID: fmt.Sprintf("media-%d", st%8),
				ChannelID: fmt.Sprintf("ch%04d", st), Vhost: "__defaultVhost__", App: "live", StreamID: fmt.Sprintf("cam%04d", st),
				FileName: start.Format("15-04-05") + ".mp4", RelPath: "x", FileSize: 15 << 20, StartTime: start, EndTime: start.Add(time.Minute),
				StartMs: start.UnixMilli(), EndMs: start.Add(time.Minute).UnixMilli(), DurationMs: 60000, Frames: 1500, Codecs: []string{"H264", "AAC"},
				FileState: recording.FileCompleted, RecordDate: start.Format("2006-01-02"), SourceHook: recording.SourceHookRecordMP4,
				IndexSource: recording.IndexFromHook, IndexedAt: start.Add(time.Minute)}
			op, err := store.PutRecord(recording.FilePrefix+f.FileID, f)
			if err != nil {
				return err
			}
			ops = append(ops, op)
		}
		if _, err := s.Node.Txn(ctx, store.TxnRequest{Then: ops}); err != nil {
			return err
		}
	}
	total := streams * perStream
	indexing := time.Since(t0)
	fmt.Printf("indexed %d files in %s\n", total, indexing.Round(time.Second))
	client := &http.Client{Timeout: 30 * time.Second}
	list := func(q url.Values) (int, error) {
		req, _ := http.NewRequest("GET", "http://"+s.HTTPAddr+"/api/v2/recording/files?"+q.Encode(), nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return 0, fmt.Errorf("%d %s", resp.StatusCode, body)
		}
		var page struct {
			Total int `json:"total"`
		}
		return page.Total, json.Unmarshal(body, &page)
	}
	hour := func(q url.Values) url.Values {
		from := base.Add(time.Duration(rand.IntN(perStream-60)) * time.Minute)
		q.Set("startTime", from.Format(time.RFC3339))
		q.Set("endTime", from.Add(time.Hour).Format(time.RFC3339))
		q.Set("pageSize", "100")
		return q
	}
	type result struct {
		name     string
		matching int
		lat      []time.Duration
	}
	cases := []struct {
		name  string
		query func() url.Values
	}{
		{"one stream, one hour (`streamId`, `startTime`, `endTime`)", func() url.Values {
			return hour(url.Values{"streamId": {fmt.Sprintf("cam%04d", rand.IntN(streams))}})
		}},
		{"one channel, one hour (`channelId`, `startTime`, `endTime`)", func() url.Values {
			return hour(url.Values{"channelId": {fmt.Sprintf("ch%04d", rand.IntN(streams))}})
		}},
		{"every channel, one hour, first page (`startTime`, `endTime`)", func() url.Values {
			return hour(url.Values{})
		}},
		{"one stream, first page of all its files (`streamId`, 100 a page)", func() url.Values {
			return url.Values{"streamId": {fmt.Sprintf("cam%04d", rand.IntN(streams))}, "pageSize": {"100"}}
		}},
		{"one stream, last page of all its files", func() url.Values {
			return url.Values{"streamId": {fmt.Sprintf("cam%04d", rand.IntN(streams))}, "pageSize": {"100"}, "page": {fmt.Sprint(perStream / 100)}}
		}},
	}
	var results []result
	for _, c := range cases {
		r := result{name: c.name}
		for range queries {
			q := c.query()
			t := time.Now()
			n, err := list(q)
			r.lat = append(r.lat, time.Since(t))
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			r.matching = n
		}
		sort.Slice(r.lat, func(i, j int) bool { return r.lat[i] < r.lat[j] })
		results = append(results, r)
		fmt.Printf("%s: p50 %.2f ms, p99 %.2f ms\n", c.name, ms(r.lat, 50), ms(r.lat, 99))
	}
	var w strings.Builder
	fmt.Fprintf(&w, "## Recording file listing (recordbench)\n\n%s. `go run ./test/bench/recordbench` (in `make bench`), %s.\n\n",
		benchdoc.Machine(), time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(&w, "%d files in the index (%d streams, %d one-minute files each, written in %d Txns of %d files in %s). "+
		"Each case is %d requests of `GET /api/v2/recording/files` from one client on loopback, parameters picked at random:\n\n",
		total, streams, perStream, perStream, streams, indexing.Round(time.Second), queries)
	fmt.Fprintf(&w, "| case | matching files | p50 ms | p99 ms | target p99 |\n|---|--:|--:|--:|---|\n")
	for _, r := range results {
		fmt.Fprintf(&w, "| %s | %d | %.2f | %.2f | < 50 ms (%s) |\n", r.name, r.matching, ms(r.lat, 50), ms(r.lat, 99), benchdoc.Verdict(ms(r.lat, 99) < 50))
	}
	if first, last := results[3], results[4]; ms(first.lat, 50) > 0 {
		fmt.Fprintf(&w, "\nLast page against first page (p50): %.2fx.\n", ms(last.lat, 50)/ms(first.lat, 50))
	}
	fmt.Fprintf(&w, "\nThe time cases are one `query.Overlaps`: the composite trees (`stream_id` or `channel_id`, `start_ms`, `end_ms`, "+
		"`file_state`) of the `recording_files` index are read over the files that began in [start - longest, end), where longest is the "+
		"longest file of that stream or channel (of every file across channels), read in one step from the tree (`stream_id` or "+
		"`channel_id`, `span_ms`); only the page's records are read. The machine's two cores are shared with the client, so p99 "+
		"figures are noisy.\n")
	fmt.Print(w.String())
	return benchdoc.WriteSection(outPath, "recordbench", w.String())
}

func ms(lat []time.Duration, p int) float64 {
	return float64(lat[min(len(lat)*p/100, len(lat)-1)].Microseconds()) / 1000
}
