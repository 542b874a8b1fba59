package report

import (
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/emit"
)

// A plan for a workload shows a table of its phases, one row each with its figures alone and
// its stage times, and per-request headline cards; a plan without one shows no such table.
func TestReportWorkload(t *testing.T) {
	m := sampleManifest(2, true)
	if els := parseReport(t, mustReport(t, m)); len(find(els, "table", "workload")) != 0 {
		t.Fatal("a plan without a workload has a workload table")
	}
	m.Predicted.Workload = []emit.PhasePrediction{
		{Name: "prefill", Dims: map[string]int64{"seq": 512, "past": 0}, Weight: 1, StageS: []float64{2e-3, 3e-3}, BottleneckS: 3e-3, ThroughputPerS: 333.3, LatencyS: 5e-3},
		{Name: "decode", Dims: map[string]int64{"seq": 1, "past": 1024}, Weight: 128, StageS: []float64{4e-4, 5e-4}, BottleneckS: 5e-4, ThroughputPerS: 2000, LatencyS: 9e-4},
	}
	els := parseReport(t, mustReport(t, m))
	tables := find(els, "table", "workload")
	if len(tables) != 1 {
		t.Fatalf("%d workload tables", len(tables))
	}
	// The cells of each body row, in order.
	var rows [][]string
	start := -1
	for i, e := range els {
		if e == tables[0] {
			start = i
		}
	}
	for _, e := range els[start+1:] {
		if e.depth <= tables[0].depth {
			break
		}
		switch e.name {
		case "tr":
			rows = append(rows, nil)
		case "td":
			rows[len(rows)-1] = append(rows[len(rows)-1], strings.TrimSpace(e.text))
		}
	}
	want := [][]string{nil,
		{"prefill", "past=0, seq=512", "1", "3 ms", "333.3 /s", "5 ms", "2 ms", "3 ms"},
		{"decode", "past=1024, seq=1", "128", "500 µs", "2000 /s", "900 µs", "400 µs", "500 µs"}}
	if len(rows) != len(want) {
		t.Fatalf("rows %q", rows)
	}
	for i := range want {
		if strings.Join(rows[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("row %d: %q, want %q", i, rows[i], want[i])
		}
	}
	var cards []string
	for _, e := range find(els, "div", "card") {
		cards = append(cards, strings.Join(strings.Fields(e.text), " "))
	}
	if !strings.Contains(strings.Join(cards, "|"), "predicted busiest stage per request") {
		t.Errorf("cards %q", cards)
	}
}
