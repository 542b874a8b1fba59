package report

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/emit"
)

// element is one start tag of a parsed report.
type element struct {
	name  string
	attr  map[string]string
	text  string // character data inside, children's included
	depth int
}

// parseReport parses report.html as (HTML-flavoured) XML and returns its elements in
// document order; it fails the test on malformed markup.
func parseReport(t *testing.T, page []byte) []*element {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(page))
	d.Strict = false
	d.AutoClose = xml.HTMLAutoClose
	d.Entity = xml.HTMLEntity
	var out, stack []*element
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("report is not well formed: %v", err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			e := &element{name: tk.Name.Local, attr: map[string]string{}, depth: len(stack)}
			for _, a := range tk.Attr {
				e.attr[a.Name.Local] = a.Value
			}
			out = append(out, e)
			stack = append(stack, e)
		case xml.EndElement:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case xml.CharData:
			for _, e := range stack {
				e.text += string(tk)
			}
		}
	}
	return out
}

func find(els []*element, name, class string) []*element {
	var out []*element
	for _, e := range els {
		if e.name == name && (class == "" || e.attr["class"] == class) {
			out = append(out, e)
		}
	}
	return out
}

func mustReport(t *testing.T, m *emit.Manifest) []byte {
	t.Helper()
	b, err := HTML(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReportStageBoxes(t *testing.T) {
	for _, k := range []int{1, 2, 4, 9} {
		for _, pred := range []bool{false, true} {
			m := sampleManifest(k, pred)
			els := parseReport(t, mustReport(t, m))
			boxes := find(els, "g", "stage")
			if len(boxes) != k {
				t.Fatalf("k=%d predicted=%v: %d stage boxes", k, pred, len(boxes))
			}
			var bott []string
			for i, b := range boxes {
				if b.attr["data-stage"] != strconv.Itoa(i) {
					t.Errorf("k=%d: box %d has data-stage %q", k, i, b.attr["data-stage"])
				}
				if b.attr["data-bottleneck"] == "true" {
					bott = append(bott, b.attr["data-stage"])
				}
			}
			// sampleManifest's stage i has (i+1) GFLOP: the last stage is the slowest. A
			// single stage is no bottleneck.
			switch {
			case pred && k > 1 && (len(bott) != 1 || bott[0] != strconv.Itoa(k-1)):
				t.Errorf("k=%d: bottleneck boxes %v, want [%d]", k, bott, k-1)
			case (!pred || k == 1) && len(bott) != 0:
				t.Errorf("k=%d predicted=%v: bottleneck boxes %v, want none", k, pred, bott)
			}
		}
	}
}

// Box widths follow predicted time (or FLOPs): the boxes of sampleManifest grow with the
// stage index, and a 4× slower stage gets a 4× wider box when no floor applies.
func TestReportBoxWidthsFollowCost(t *testing.T) {
	for _, pred := range []bool{false, true} {
		m := sampleManifest(4, pred)
		els := parseReport(t, mustReport(t, m))
		rects := find(els, "rect", "box")
		last := find(els, "rect", "box box-bottleneck")
		rects = append(rects, last...)
		if len(rects) != 4 {
			t.Fatalf("predicted=%v: %d box rects", pred, len(rects))
		}
		var w []float64
		for _, r := range rects {
			v, err := strconv.ParseFloat(r.attr["width"], 64)
			if err != nil {
				t.Fatal(err)
			}
			w = append(w, v)
		}
		for i := 1; i < len(w); i++ {
			if w[i] <= w[i-1] {
				t.Errorf("predicted=%v: widths %v do not grow with the stage cost", pred, w)
			}
		}
	}
	got := boxWidths([]float64{1, 4, 0, 2}, 1000)
	if got[2] != boxMinW {
		t.Errorf("zero-cost box %v, want the floor %v", got[2], boxMinW)
	}
	if r := got[1] / got[3]; math.Abs(r-2) > 1e-9 {
		t.Errorf("widths %v: 4 vs 2 should be 2× wide, got %v×", got, r)
	}
	if sum := got[0] + got[1] + got[2] + got[3]; math.Abs(sum-1000) > 1e-6 {
		t.Errorf("widths %v sum to %v, want 1000", got, sum)
	}
	if got := boxWidths([]float64{1, 1, 1}, 100); got[0] != boxMinW || got[2] != boxMinW {
		t.Errorf("too little room: %v, want the floor", got)
	}
	if got := boxWidths([]float64{0, 0}, 1000); got[0] != 500 || got[1] != 500 {
		t.Errorf("no weights: %v, want equal widths", got)
	}
}

func TestReportDeterministic(t *testing.T) {
	m := sampleManifest(5, true)
	a := mustReport(t, m)
	b := mustReport(t, m)
	if !bytes.Equal(a, b) {
		t.Fatal("two renderings of the same manifest differ")
	}
	// Through manifest.json and back: the same page.
	js, err := m.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	back, err := emit.DecodeManifest(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	if c := mustReport(t, back); !bytes.Equal(a, c) {
		t.Fatal("the report of the manifest read back from JSON differs")
	}
}

func TestReportEscapesModelNames(t *testing.T) {
	m := sampleManifest(3, true)
	m.Stages[1].Nodes = append(m.Stages[1].Nodes, `</title><script>alert(1)</script>`)
	m.Transfers[0].Tensor = `"><img src=x onerror=alert(1)>`
	m.Timeline = []emit.TimelineEvent{{Device: m.Stages[0].Device, Kind: emit.EventCompute, Label: "<svg onload=alert(1)>", Stage: 0, EndS: 1e-3}}
	page := mustReport(t, m)
	for _, bad := range []string{"<evil>", "<node0>", "<b>markup</b>", "<script", "<img", "<svg onload", "gpu0<x>", "t0<", "brkga<x>"} {
		if bytes.Contains(page, []byte(bad)) {
			t.Errorf("report contains %q unescaped", bad)
		}
	}
	for _, want := range []string{"&lt;evil&gt;.onnx", "gpu1&lt;x&gt;", "&lt;b&gt;markup&lt;/b&gt;", "out&amp;&#34;put&#34;"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("report lacks the escaped text %q", want)
		}
	}
	// Escaped names read back as the original text.
	els := parseReport(t, page)
	found := false
	for _, e := range find(els, "td", "mono") {
		if e.text == `"><img src=x onerror=alert(1)>` {
			found = true
		}
	}
	if !found {
		t.Error("the hostile tensor name does not read back from the transfers table")
	}
}

// The page needs nothing from outside: no script, no external resource, no URL other than
// references to its own SVG definitions.
func TestReportSelfContained(t *testing.T) {
	for _, pred := range []bool{false, true} {
		page := mustReport(t, sampleManifest(4, pred))
		low := bytes.ToLower(page)
		for _, bad := range []string{"<script", "http:", "https:", "src=", "@import", "<link", "<iframe", "javascript:"} {
			if bytes.Contains(low, []byte(bad)) {
				t.Errorf("predicted=%v: report contains %q", pred, bad)
			}
		}
		for _, m := range regexp.MustCompile(`url\(([^)]*)\)`).FindAllSubmatch(page, -1) {
			if !bytes.HasPrefix(m[1], []byte("#")) {
				t.Errorf("predicted=%v: url(%s) is not a local reference", pred, m[1])
			}
			id := string(m[1][1:])
			if !bytes.Contains(page, []byte(`id="`+id+`"`)) {
				t.Errorf("predicted=%v: url(#%s) refers to nothing", pred, id)
			}
		}
	}
}

func TestReportWithoutPredictions(t *testing.T) {
	m := sampleManifest(3, false)
	page := string(mustReport(t, m))
	for _, want := range []string{
		"Predictions absent", "boxes sized by FLOPs", "Not certified", "No timeline",
		"No lower bounds in this manifest", "Per-stage predicted times are absent",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report without predictions lacks %q", want)
		}
	}
	for _, bad := range []string{"Steady-state", "predicted bottleneck", `data-bottleneck`} {
		if strings.Contains(page, bad) {
			t.Errorf("report without predictions shows %q", bad)
		}
	}
	// Memory falls back to the stages' weights against the devices' memory.
	if !strings.Contains(page, "1.00 MiB weights of 8.00 MiB (12.5%)") {
		t.Error("memory of a device without an estimate is not its weights against its memory")
	}
	m.Devices = nil
	page = string(mustReport(t, m))
	if !strings.Contains(page, "weights, capacity unknown") {
		t.Error("devices of unknown memory are not marked")
	}
}

func TestReportMemoryOverCapacity(t *testing.T) {
	m := sampleManifest(3, true)
	m.Memory[2].UsedBytes = 5 << 20
	els := parseReport(t, mustReport(t, m))
	over := find(els, "rect", "used over")
	if len(over) != 1 || !strings.Contains(over[0].text, "over capacity") {
		t.Fatalf("want one bar over capacity, got %d", len(over))
	}
}

func TestReportCertificate(t *testing.T) {
	for _, c := range []struct {
		name            string
		objective       emit.Objective
		bottleneck, lat float64
		lower, gap      float64
		noPredicted     bool
		want            string
	}{
		{"gap", "throughput", 1e-3, 5e-3, 0.97e-3, 0.03, false, "At most 3.1% slower than the best possible split"},
		{"latency uses the latency", "latency", 1e-3, 2e-3, 1.5e-3, 0.25, false, "At most 33.3% slower than the best possible placement"},
		{"optimal", "throughput", 1e-3, 1e-3, 1e-3, 0, false, "Proven optimal"},
		{"zero bound", "throughput", 1e-3, 1e-3, 0, 1, false, "No useful bound"},
		{"upper from the gap", "throughput", 0, 0, 0.9e-3, 0.1, true, "At most 11.1% slower"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := sampleManifest(2, true)
			m.Objective = c.objective
			m.Predicted = &emit.Predicted{BottleneckS: c.bottleneck, LatencyS: c.lat, ThroughputPerS: 1 / c.bottleneck}
			if c.noPredicted {
				m.Predicted = nil
			}
			m.Bounds = &emit.Bounds{LowerBoundS: c.lower, Method: "mip", Gap: c.gap}
			cert := certificate(m)
			if !strings.Contains(cert.Headline, c.want) {
				t.Errorf("headline %q, want %q", cert.Headline, c.want)
			}
			page := string(mustReport(t, m))
			if !strings.Contains(page, c.want) {
				t.Errorf("page lacks %q", c.want)
			}
		})
	}
}

func TestReportBoundsChart(t *testing.T) {
	m := sampleManifest(3, true)
	els := parseReport(t, mustReport(t, m))
	bars := find(els, "rect", "bound")
	if len(bars) != 3 {
		t.Fatalf("%d bound bars, want 3", len(bars))
	}
	// Ascending, and the best (mip) row marked.
	var prev float64
	for _, b := range bars {
		w, _ := strconv.ParseFloat(b.attr["width"], 64)
		if w < prev {
			t.Errorf("bound bars are not in increasing order")
		}
		prev = w
	}
	if best := find(els, "g", "chart-row best"); len(best) != 1 {
		t.Errorf("%d best rows, want 1", len(best))
	}
	upper := find(els, "rect", "upper")
	if len(upper) != 1 {
		t.Fatalf("%d plan bars, want 1", len(upper))
	}
	uw, _ := strconv.ParseFloat(upper[0].attr["width"], 64)
	if math.Abs(prev/uw-0.97) > 0.01 {
		t.Errorf("best bound bar is %.3f of the plan bar, want 0.97", prev/uw)
	}
}

func TestPipelineStarts(t *testing.T) {
	totals := []float64{1, 3, 2}
	s := pipelineStarts(totals, 5)
	// Stage 0 runs back to back; stage 1 (the bottleneck) too once fed; stage 2 waits for it.
	want := [][]float64{{0, 1, 2, 3, 4}, {1, 4, 7, 10, 13}, {4, 7, 10, 13, 16}}
	for i := range want {
		for j := range want[i] {
			if s[i][j] != want[i][j] {
				t.Fatalf("starts %v, want %v", s, want)
			}
		}
	}
}

func TestReportSteadyState(t *testing.T) {
	m := sampleManifest(3, true)
	els := parseReport(t, mustReport(t, m))
	bars := find(els, "rect", "bar inference")
	onBott := find(els, "rect", "bar inference on-bottleneck")
	n := min(max(3+4, 6), 14)
	if len(bars)+len(onBott) != 3*n || len(onBott) != n {
		t.Fatalf("%d + %d inference bars, want %d with %d on the bottleneck", len(bars), len(onBott), 3*n, n)
	}
	// The bottleneck's bars follow one another without a gap: one result per bottleneck time.
	for i := 1; i < len(onBott); i++ {
		x0, _ := strconv.ParseFloat(onBott[i-1].attr["x"], 64)
		w0, _ := strconv.ParseFloat(onBott[i-1].attr["width"], 64)
		x1, _ := strconv.ParseFloat(onBott[i].attr["x"], 64)
		if math.Abs(x0+w0-x1) > 0.2 {
			t.Errorf("bottleneck bar %d starts at %v, want %v", i, x1, x0+w0)
		}
	}
	if hl := find(els, "g", "row highlight"); len(hl) != 1 || hl[0].attr["data-row-stage"] != "2" {
		t.Errorf("the bottleneck row (stage 2) is not highlighted once")
	}
	// Latency plans show one inference only.
	m.Objective = "latency"
	if strings.Contains(string(mustReport(t, m)), "Steady-state") {
		t.Error("a latency plan shows the steady-state pipeline")
	}
}

func TestReportTimeline(t *testing.T) {
	m := sampleManifest(2, true)
	d0, d1 := m.Stages[0].Device, m.Stages[1].Device
	m.Timeline = []emit.TimelineEvent{
		{Device: d0, Kind: emit.EventCompute, Label: "conv<1>", Stage: 0, StartS: 0, EndS: 2e-4},
		{Device: d0, Kind: emit.EventCompute, Label: "relu", Stage: 0, StartS: 2e-4, EndS: 3e-4},
		{Device: d0, Kind: emit.EventTransfer, ToDevice: d1, Label: "t0<", Stage: 0, StartS: 3e-4, EndS: 4e-4},
		{Device: d1, Kind: emit.EventCompute, Label: "fc", Stage: 1, StartS: 4e-4, EndS: 9e-4},
	}
	els := parseReport(t, mustReport(t, m))
	compute := find(els, "rect", "bar compute")
	comm := find(els, "rect", "bar comm")
	if len(compute) != 3 || len(comm) != 1 {
		t.Fatalf("%d compute and %d transfer bars, want 3 and 1", len(compute), len(comm))
	}
	var labels []string
	for _, e := range els {
		if e.name == "text" && e.attr["class"] == "row-label" {
			labels = append(labels, e.text)
		}
	}
	// Timeline rows (two devices, one link) come before the steady-state rows.
	if len(labels) < 3 || labels[0] != d0 || labels[1] != d1 || labels[2] != d0+" → "+d1 {
		t.Errorf("timeline rows %q", labels)
	}
	if !strings.Contains(compute[0].text, "conv<1> on "+d0) {
		t.Errorf("bar tooltip %q", compute[0].text)
	}
	// The fc bar spans 5/9 of the plot.
	x, _ := strconv.ParseFloat(compute[2].attr["x"], 64)
	w, _ := strconv.ParseFloat(compute[2].attr["width"], 64)
	plot := reportWidth - ganttLabelW - 20
	if math.Abs(x-(ganttLabelW+plot*4/9)) > 0.1 || math.Abs(w-plot*5/9) > 0.1 {
		t.Errorf("fc bar at x=%v w=%v", x, w)
	}
}

func TestWriteReport(t *testing.T) {
	dir := t.TempDir()
	m := sampleManifest(2, false)
	if err := Write(m, dir, Options{Title: "my plan", Producer: "onnxpart test"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("<title>my plan</title>")) || !bytes.Contains(b, []byte("Generated by onnxpart test")) {
		t.Error("title or producer not used")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only report.html", len(ents))
	}
	if err := Write(m, filepath.Join(dir, "missing"), Options{}); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
	if _, err := HTML(&emit.Manifest{Format: emit.Format}, Options{}); err == nil {
		t.Error("a manifest without stages gave a report")
	}
}

func TestReportFormatting(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{fmtFLOPs(157120000), "157 MFLOP"}, {fmtFLOPs(999), "999 FLOP"}, {fmtFLOPs(2.5e12), "2.5 TFLOP"},
		{fmtSeconds(0), "0 s"}, {fmtSeconds(3.17e-4), "317 µs"}, {fmtSeconds(1.04e-3), "1.04 ms"}, {fmtSeconds(2.5), "2.5 s"},
		{fmtSeconds(5e-9), "5 ns"}, {fmtPercent(0.03), "3.0%"}, {fmtPercent(0.0047), "0.47%"}, {fmtRate(3157.2), "3157 /s"},
		{trimFloat(0.5, 3), "0.5"}, {trimFloat(1234.7, 3), "1235"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	for _, c := range []struct{ raw, want float64 }{{0.13, 0.2}, {0.3, 0.5}, {7, 10}, {1e-4, 1e-4}, {2.1e-5, 5e-5}} {
		if got := niceStep(c.raw); math.Abs(got-c.want) > c.want*1e-9 {
			t.Errorf("niceStep(%v) = %v, want %v", c.raw, got, c.want)
		}
	}
	if got := truncate("abcdefgh", 5); got != "abcd…" {
		t.Errorf("truncate: %q", got)
	}
}

// TestReportBatch checks a batched plan's page: the batch section lists the shares and the
// routes, the certificate judges the time of the batch (not the slowest stage), and no
// steady-state pipeline is drawn (a batch is not a pipeline).
func TestReportBatch(t *testing.T) {
	m := sampleManifest(2, true)
	m.Objective = "throughput"
	m.Predicted = &emit.Predicted{BottleneckS: 2e-3, LatencyS: 1e-3, ThroughputPerS: 16000}
	m.Bounds = &emit.Bounds{LowerBoundS: 0.8e-3, Method: "load", Gap: 0.2}
	m.Batch = &emit.Batch{Inputs: 16, Granules: 8, GranuleInputs: 2, MakespanS: 1e-3, ThroughputPerS: 16000,
		Devices: []emit.BatchDevice{{Device: "gpu0", Ops: 10, GranuleTasks: 70, Inputs: 14, BusyS: 1e-3}, {Device: "gpu1", Ops: 4, GranuleTasks: 4, Inputs: 2, BusyS: 0.3e-3}},
		Routes: []emit.Route{{Index: 0, Dir: ".", Granules: []int{0, 1, 2, 3, 4, 5, 6}, Inputs: 14, Devices: []string{"gpu0"}},
			{Index: 1, Dir: "route1", Granules: []int{7}, Inputs: 2, Devices: []string{"gpu1", "gpu0"}}}}
	page := string(mustReport(t, m))
	for _, want := range []string{`<section id="batch">`, "A batch of 16 inputs in 8 granules of 2", "gpu1 → gpu0", "route1",
		"At most 25.0% slower than the best possible batched placement", "Timeline of a batch of 16",
		"Route 0 of 2 (14 of the batch&#39;s 16 inputs)", "so the batch takes 1 ms"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "Steady-state") {
		t.Error("a batched plan shows a steady-state pipeline")
	}
	// The batch time everywhere: no slowest-stage or bottleneck figure, and the bound chart's
	// plan bar is the batch's 1 ms, not the 2 ms slowest stage.
	for _, bad := range []string{"slowest stage", "predicted bottleneck", `data-bottleneck="true"`, ">2 ms ·"} {
		if strings.Contains(page, bad) {
			t.Errorf("a batched plan's page shows %q", bad)
		}
	}
	if !strings.Contains(page, `1 ms · 100.0% of the plan`) {
		t.Error("the bound chart's plan bar is not the batch time")
	}
}
