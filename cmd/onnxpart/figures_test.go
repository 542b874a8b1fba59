package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	htmlpkg "html"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/emit/schema"
	"github.com/onnxpart/onnxpart/report"
)

// seconds parses "662 µs", "662µs", "1.2 ms", "3 s".
func seconds(t *testing.T, v, unit string) float64 {
	t.Helper()
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("number %q: %v", v, err)
	}
	switch unit {
	case "ns":
		return x * 1e-9
	case "µs":
		return x * 1e-6
	case "ms":
		return x * 1e-3
	case "s":
		return x
	}
	t.Fatalf("unit %q", unit)
	return 0
}

// near: a and b agree to the 3 significant digits the outputs print.
func near(a, b float64) bool { return math.Abs(a-b) <= 0.006*math.Max(math.Abs(a), math.Abs(b))+1e-15 }

// TestFiguresAgree plans one model for every objective (a pipeline, a latency placement, a
// batched plan) and checks that the text, --json, manifest.json and report.html state the
// same figures: the objective's value (bottleneck stage, latency, time of the batch), the
// lower bound, "at most X% slower" (upper/lower − 1) and the gap (1 − lower/upper); that
// only pipelines mark a bottleneck stage and latency and batched plans mark their critical
// path instead, the same stages everywhere; and that every stage's total includes its call
// cost.
func TestFiguresAgree(t *testing.T) {
	models, _ := filepath.Abs(filepath.Join("..", "..", "..", "shared", "models"))
	model := filepath.Join(models, "squeezenet1_1_small.onnx")
	if _, err := os.Stat(model); err != nil {
		t.Skip("the shared model corpus is not present")
	}
	for _, c := range []struct {
		name, what, model string
		args              []string
	}{
		{"throughput", "bottleneck", model, []string{"--devices", "4xA100-80G"}},
		{"latency", "latency", model, []string{"--devices", "a100-80g,t4,cpu", "--objective", "latency"}},
		// GoogLeNet's batch takes three routes, and route 0's slowest stage (701 µs) is not
		// the time of the batch (600 µs).
		{"batched", "batch of 16", filepath.Join(models, "googlenet_small.onnx"), []string{"--devices", "a100-80g,t4,cpu", "--batch", "16"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			base := append([]string{c.model, "--seed", "1", "--time-limit", "4s", "-q"}, c.args...)
			var text, jsonOut, stderr bytes.Buffer
			// The text run shows its progress (off a terminal, as in a log).
			textArgs := append(slices.DeleteFunc(slices.Clone(base), func(a string) bool { return a == "-q" }), "-o", dir)
			if code := run(context.Background(), &env{stdout: &text, stderr: &stderr}, textArgs); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			progressOut := stderr.String()
			if code := run(context.Background(), &env{stdout: &jsonOut, stderr: &stderr}, append(base, "-o", "-", "--json")); code != 0 {
				t.Fatalf("--json: exit %d: %s", code, stderr.String())
			}
			if err := schema.ValidateStrict("plan.v1", jsonOut.Bytes()); err != nil {
				t.Fatal(err)
			}
			man, err := emit.ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			f := report.PlanFigures(man)
			t.Logf("%s: upper %g, lower %g (%s), gap %g, slower %g; slowest stage %g", f.What, f.Upper, f.Lower, f.Method, f.Gap, f.Slower, man.Predicted.BottleneckS)
			if f.Upper <= 0 || f.Lower <= 0 {
				t.Fatalf("no figures: %+v", f)
			}
			// Every stage's total is its parts, the call cost included.
			for _, st := range man.Stages {
				p := st.Predicted
				if sum := p.ComputeS + p.CommS + p.OverflowS + p.CallS; !near(sum, p.TotalS) {
					t.Errorf("stage %d: total %g, parts sum to %g (%+v)", st.Index, p.TotalS, sum, *p)
				}
			}
			page, err := os.ReadFile(filepath.Join(dir, report.File))
			if err != nil {
				t.Fatal(err)
			}
			html := string(page)
			out := text.String()

			// --json: the same objective, bound, gap and slowdown as the manifest.
			var pj planJSON
			if err := json.Unmarshal(jsonOut.Bytes(), &pj); err != nil {
				t.Fatal(err)
			}
			if !near(pj.Objective, f.Upper) || !near(pj.LowerBound, f.Lower) || math.Abs(pj.Gap-f.Gap) > 1e-6 || math.Abs(pj.AtMostSlower-f.Slower) > 1e-6 {
				t.Errorf("--json objective %g, lower %g, gap %g, slower %g; manifest %g, %g, %g, %g",
					pj.Objective, pj.LowerBound, pj.Gap, pj.AtMostSlower, f.Upper, f.Lower, f.Gap, f.Slower)
			}

			// The manifest states the same certificate both ways (gap and at_most_slower).
			if b := man.Bounds; b == nil || math.Abs(b.AtMostSlower-f.Slower) > 1e-6 || math.Abs(b.Gap-f.Gap) > 1e-6 {
				t.Errorf("manifest bounds %+v; figures gap %g, slower %g", man.Bounds, f.Gap, f.Slower)
			}

			// The report's headline card, certificate and bound chart use the objective's value.
			card := regexp.MustCompile(`<div class="k">predicted ` + c.what + `</div><div class="v">([0-9.]+) (ns|µs|ms|s)</div>`).FindStringSubmatch(html)
			if card == nil {
				t.Fatalf("report has no %q card", "predicted "+c.what)
			} else if v := seconds(t, card[1], card[2]); !near(v, f.Upper) {
				t.Errorf("report card %s = %g, manifest %g", c.what, v, f.Upper)
			}
			if c.name != "throughput" && strings.Contains(html, "predicted bottleneck") || strings.Contains(html, "slowest stage") {
				t.Errorf("a %s plan's report shows a bottleneck or slowest-stage card", c.name)
			}
			cert := regexp.MustCompile(`Predicted [^<]*? ([0-9.]+) (ns|µs|ms|s); best lower bound ([0-9.]+) (ns|µs|ms|s)`).FindStringSubmatch(html)
			if cert == nil {
				t.Fatal("report certificate states no figures")
			}
			if u, l := seconds(t, cert[1], cert[2]), seconds(t, cert[3], cert[4]); !near(u, f.Upper) || !near(l, f.Lower) {
				t.Errorf("report certificate: upper %g, lower %g; manifest %g, %g", u, l, f.Upper, f.Lower)
			}
			plan := regexp.MustCompile(`plan \(predicted\)</text>.*?class="bar-label">([0-9.]+) (ns|µs|ms|s) ·`).FindStringSubmatch(html)
			if plan == nil {
				t.Fatal("bound chart has no plan bar")
			} else if v := seconds(t, plan[1], plan[2]); !near(v, f.Upper) {
				t.Errorf("bound chart's plan %g, manifest %g", v, f.Upper)
			}
			if !strings.Contains(html, htmlpkg.EscapeString("at most upper/lower − 1 = "+pct(f.Slower)+" slower; gap 1 − lower/upper = "+pct(f.Gap))) && f.Gap > 0 {
				t.Errorf("report certificate lacks slower %s and gap %s", pct(f.Slower), pct(f.Gap))
			}

			// A pipeline's one-inference timeline ends at the manifest's latency (the stages'
			// totals, calls included), as its latency card says.
			if c.name == "throughput" {
				end := regexp.MustCompile(`passes the \d+ stages in sequence: ([0-9.]+) (ns|µs|ms|s) from input to output`).FindStringSubmatch(html)
				lat := regexp.MustCompile(`<div class="k">predicted latency</div><div class="v">([0-9.]+) (ns|µs|ms|s)</div>`).FindStringSubmatch(html)
				if end == nil || lat == nil {
					t.Fatal("report lacks the one-inference timeline or the latency card")
				}
				if e, l := seconds(t, end[1], end[2]), seconds(t, lat[1], lat[2]); !near(e, man.Predicted.LatencyS) || !near(l, man.Predicted.LatencyS) {
					t.Errorf("one inference ends at %g, latency card %g; manifest latency %g", e, l, man.Predicted.LatencyS)
				}
			}

			// The last progress line states the result: the objective, bound and gap printed.
			lines := strings.Split(strings.TrimSpace(progressOut), "\n")
			last := lines[len(lines)-1]
			if m := regexp.MustCompile(`\] result: best ([0-9.]+) ?(ns|µs|ms|s), bound ([0-9.]+) ?(ns|µs|ms|s), gap ([0-9.]+)%$`).FindStringSubmatch(last); m == nil {
				t.Errorf("last progress line %q does not state the result", last)
			} else if b, l, g := seconds(t, m[1], m[2]), seconds(t, m[3], m[4]), m[5]; !near(b, f.Upper) || !near(l, f.Lower) || g != fmt.Sprintf("%.1f", 100*f.Gap) {
				t.Errorf("last progress line %q; result %g, bound %g, gap %.1f%%", last, f.Upper, f.Lower, 100*f.Gap)
			}

			// The text's bound line: both figures, labelled, as the manifest's.
			if f.Gap >= 5e-4 {
				m := regexp.MustCompile(`at most ([0-9.]+)% slower than the best possible [a-z ]+ \(upper/lower − 1; gap 1 − lower/upper = ([0-9.]+)%\)`).FindStringSubmatch(out)
				if m == nil {
					t.Fatalf("text bound line lacks labelled figures:\n%s", out)
				}
				s, _ := strconv.ParseFloat(m[1], 64)
				g, _ := strconv.ParseFloat(m[2], 64)
				if math.Abs(s-100*f.Slower) > 0.051 || math.Abs(g-100*f.Gap) > 0.051 {
					t.Errorf("text: slower %v%%, gap %v%%; manifest %.3f%%, %.3f%%", s, g, 100*f.Slower, 100*f.Gap)
				}
			}

			// Bottleneck for pipelines only; the critical path for the others, the same stages
			// in text, JSON and report.
			bottText := strings.Count(out, "◀ bottleneck")
			bottReport := strings.Count(html, `data-bottleneck="true"`)
			critText := regexp.MustCompile(`(?m)^\s*(\d+)\s.*◀ critical path$`).FindAllStringSubmatch(out, -1)
			critReport := regexp.MustCompile(`data-stage="(\d+)" data-critical="true"`).FindAllStringSubmatch(html, -1)
			var critJSON []string
			for i, sc := range pj.StageCosts {
				if sc.CriticalPath {
					critJSON = append(critJSON, strconv.Itoa(i))
				}
				if sc.Bottleneck != (c.name == "throughput" && bottText == 1 && i == bottleneckIndex(man)) {
					t.Errorf("--json stage %d bottleneck %v", i, sc.Bottleneck)
				}
			}
			list := func(m [][]string) string {
				var s []string
				for _, x := range m {
					s = append(s, x[1])
				}
				return strings.Join(s, ",")
			}
			if c.name == "throughput" {
				if bottText != 1 || bottReport != 1 || len(critText) != 0 || len(critReport) != 0 || len(critJSON) != 0 {
					t.Errorf("pipeline: bottleneck marks %d (text) %d (report), critical %v %v %v", bottText, bottReport, critText, critReport, critJSON)
				}
				return
			}
			if bottText != 0 || bottReport != 0 {
				t.Errorf("%s plan marks a bottleneck: %d in the text, %d in the report", c.name, bottText, bottReport)
			}
			want := report.CriticalStages(man)
			var ws []string
			for _, i := range want {
				ws = append(ws, strconv.Itoa(i))
			}
			if len(want) == 0 {
				t.Fatal("no stage on the critical path")
			}
			if list(critText) != strings.Join(ws, ",") || list(critReport) != strings.Join(ws, ",") || strings.Join(critJSON, ",") != strings.Join(ws, ",") {
				t.Errorf("critical path: text %s, report %s, json %v, manifest timeline %v\n%s", list(critText), list(critReport), critJSON, ws, out)
			}
		})
	}
}

func pct(f float64) string {
	p := f * 100
	if p > 0 && p < 0.01 {
		return "<0.01%" // a gap of float noise (a bound that meets the plan to 1e-9)
	}
	if math.Abs(p) < 1 && p != 0 {
		return strconv.FormatFloat(p, 'f', 2, 64) + "%"
	}
	return strconv.FormatFloat(p, 'f', 1, 64) + "%"
}

// bottleneckIndex is the position of the slowest stage of a manifest (the first on ties).
func bottleneckIndex(m *emit.Manifest) int {
	b := 0
	for i, s := range m.Stages {
		if s.Predicted.TotalS > m.Stages[b].Predicted.TotalS {
			b = i
		}
	}
	return b
}
