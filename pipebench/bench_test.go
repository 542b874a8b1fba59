package pipebench_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart"
	"github.com/onnxpart/onnxpart/devices"
	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/emit/schema"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/pipebench"
	"github.com/onnxpart/onnxpart/pipebench/benchtest"
	"github.com/onnxpart/onnxpart/profile"
	"github.com/onnxpart/onnxpart/report"
	"github.com/onnxpart/onnxpart/verify/npy"
)

const resnet = "../testdata/models/resnet50_small.onnx"

func needORT(t *testing.T) {
	t.Helper()
	if _, err := ort.LibraryPath(); err != nil {
		t.Skip(err)
	}
}

// hostDevices is the host CPU as two one-thread devices where there are two CPUs, else two
// catalog CPUs (the bench then runs both on the one CPU).
func hostDevices() string {
	if len(devices.AllowedCPUs()) >= 2 {
		return "cpu:2x1"
	}
	return "2xcpu-generic"
}

// planDir plans the bundled ResNet-50 in two stages on devices (roofline costs) and writes
// the stage files; it returns the directory and the cluster.
func planDir(t *testing.T, devices string) (string, *profile.Cluster) {
	t.Helper()
	return planDirOpt(t, devices, onnxpart.Options{MaxStages: 2})
}

func planDirOpt(t *testing.T, devices string, opt onnxpart.Options) (string, *profile.Cluster) {
	t.Helper()
	ctx := context.Background()
	m, err := ingest.Load(resnet, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := hw.Resolve(ctx, devices, hw.Options{Host: hw.HostOptions{NoBench: true}})
	if err != nil {
		t.Fatal(err)
	}
	opt.Seed, opt.Reproducible, opt.Bounds, opt.TimeLimit = 1, true, "simple", 30*time.Second
	r, err := onnxpart.Plan(ctx, m, c, opt)
	if err != nil {
		t.Fatal(err)
	}
	l, err := onnxpart.Prepare(m, r, emit.Options{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	if err := l.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	return dir, c
}

// A short bench of the bundled ResNet-50 in two stages: every measured request runs every
// stage once, the figures hang together (no device can be busier than the window, throughput
// cannot beat the slowest stage), each is set beside the manifest's prediction, and the JSON
// satisfies the bench.v1 schema.
func TestBenchResNet50(t *testing.T) {
	needORT(t)
	dir, c := planDir(t, hostDevices())
	const n = 24
	var phases []string
	rep, err := pipebench.Run(context.Background(), dir, pipebench.Options{Requests: n, Warmup: 3,
		Devices: pipebench.DevicesFrom(c), Phase: func(s string) { phases = append(phases, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(phases, ",") != "loading the stages,warm-up,measuring" {
		t.Errorf("phases %v", phases)
	}
	if rep.Requests != n || rep.Interrupted || rep.Stages != 2 || rep.InFlight != 2 || rep.Routes != 1 {
		t.Fatalf("report %+v", rep)
	}
	if rep.Throughput.Measured <= 0 || rep.Throughput.Planned == nil || rep.Throughput.Ratio == nil {
		t.Errorf("throughput %+v", rep.Throughput)
	}
	if got := float64(rep.Requests) / rep.Seconds; abs(got-rep.Throughput.Measured) > 1e-9*got {
		t.Errorf("throughput %g, requests/window %g", rep.Throughput.Measured, got)
	}
	l := rep.Latency
	if l.Count != n || !(l.Min <= l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.Max) {
		t.Errorf("latency %+v", l)
	}
	if rep.LatencySingle == nil || rep.LatencySingle.Count != 2 || rep.LatencyVsPlan.Planned == nil {
		t.Errorf("latency alone %+v vs plan %+v", rep.LatencySingle, rep.LatencyVsPlan)
	}
	man, err := emit.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	slowest := 0.0
	for i, s := range rep.StageTimes {
		if s.Stage != i || s.Runs != n || s.Busy.Measured <= 0 || s.CPU <= 0 || s.Device != man.Stages[i].Device {
			t.Errorf("stage %d: %+v", i, s)
		}
		if s.Busy.Planned == nil || *s.Busy.Planned != man.Stages[i].Predicted.TotalS || s.Busy.Ratio == nil {
			t.Errorf("stage %d: busy %+v, the manifest predicts %+v", i, s.Busy, man.Stages[i].Predicted)
		}
		slowest = max(slowest, s.Busy.Measured)
	}
	// A pipeline cannot complete requests faster than its slowest stage runs them (with room
	// for the calls of measured requests that began before the window).
	if rep.Throughput.Measured > 1.5/slowest {
		t.Errorf("throughput %.1f/s beats the slowest stage (%.3g s a request)", rep.Throughput.Measured, slowest)
	}
	seen := map[int]bool{}
	for _, d := range rep.Devices {
		if d.Utilization <= 0 || d.Utilization > 1 || d.Stages != 1 {
			t.Errorf("device %+v", d)
		}
		if hostDevices() == "cpu:2x1" && (d.Threads != 1 || len(d.CPUs) != 1) {
			t.Errorf("device %s: %d threads on CPUs %v, want one thread pinned to one CPU", d.Name, d.Threads, d.CPUs)
		}
		for _, x := range d.CPUs {
			if seen[x] {
				t.Errorf("CPU %d pinned twice", x)
			}
			seen[x] = true
		}
	}
	doc, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.ValidateStrict("bench.v1", doc); err != nil {
		t.Errorf("bench --json does not satisfy bench.v1: %v\n%s", err, doc)
	}

	// The report gains the measured section, and a second bench replaces it.
	page := filepath.Join(dir, "report.html")
	man, merr := emit.ReadManifest(dir)
	if merr != nil {
		t.Fatal(merr)
	}
	if err := report.Write(man, dir, report.Options{}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := pipebench.UpdateReport(page, rep); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(page)
	if s := string(b); strings.Count(s, `<section id="bench"`) != 1 || !strings.Contains(s, "throughput (inferences/s)") || !strings.HasSuffix(strings.TrimSpace(s), "</html>") {
		t.Errorf("report.html after two updates:\n%s", s)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// A stage that fails at run time stops the bench with an error naming it, without hanging.
func TestBenchStageFails(t *testing.T) {
	needORT(t)
	dir, c := planDir(t, hostDevices())
	if err := benchtest.FailingStage(dir, 1); err != nil {
		t.Fatal(err)
	}
	type result struct {
		rep *pipebench.Report
		err error
	}
	done := make(chan result, 1)
	before := runtime.NumGoroutine()
	go func() {
		rep, err := pipebench.Run(context.Background(), dir, pipebench.Options{Requests: 50, Warmup: 2, InFlight: 4, Devices: pipebench.DevicesFrom(c)})
		done <- result{rep, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the bench hangs on a failing stage")
	}
	var de *diag.Error
	if !errors.As(r.err, &de) || de.Kind != diag.KindInput || de.Subject != (diag.Subject{Kind: diag.Stage, Name: "1"}) || r.rep != nil {
		t.Fatalf("Run: %v (%T), report %v; want an input *diag.Error about stage 1", r.err, r.err, r.rep)
	}
	man, _ := emit.ReadManifest(dir)
	want := "stage 1 (stage1.onnx on " + man.Stages[1].Device + ") failed at run time on request 0: "
	if !strings.HasPrefix(de.Error(), want) || !strings.Contains(de.Error(), "Gather") || de.Cause == nil {
		t.Errorf("error %q, want it to start %q and give ONNX Runtime's message", de.Error(), want)
	}
	// Every worker has exited.
	for i := 0; runtime.NumGoroutine() > before && i < 100; i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines left behind", n-before)
	}
}

// Cancelling the context (Ctrl-C) returns what was measured so far.
func TestBenchInterrupted(t *testing.T) {
	needORT(t)
	dir, c := planDir(t, hostDevices())
	ctx, cancel := context.WithCancel(context.Background())
	var once bool
	opt := pipebench.Options{Duration: time.Hour, Warmup: 2, Devices: pipebench.DevicesFrom(c), Phase: func(s string) {
		if s == "measuring" && !once {
			once = true
			time.AfterFunc(1500*time.Millisecond, cancel)
		}
	}}
	start := time.Now()
	rep, err := pipebench.Run(ctx, dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > time.Minute {
		t.Errorf("took %v to stop", el)
	}
	if !rep.Interrupted || rep.Requests == 0 || rep.Throughput.Measured <= 0 || len(rep.StageTimes) != 2 || rep.StageTimes[0].Runs < rep.Requests {
		t.Errorf("interrupted report: requests %d, throughput %+v, stages %+v", rep.Requests, rep.Throughput, rep.StageTimes)
	}
	doc, _ := json.Marshal(rep)
	if err := schema.ValidateStrict("bench.v1", doc); err != nil {
		t.Error(err)
	}
}

// Without --devices, one device gets every CPU and several share them, each pinned apart.
func TestDefaultDevices(t *testing.T) {
	cpus := devices.AllowedCPUs()
	one := pipebench.DefaultDevices([]string{"cpu"})
	if d := one["cpu"]; d.Threads != len(cpus) || d.CPUs != nil {
		t.Errorf("one device: %+v", d)
	}
	two := pipebench.DefaultDevices([]string{"cpu0", "cpu1"})
	if len(cpus) >= 2 {
		a, b := two["cpu0"], two["cpu1"]
		if a.Threads != len(cpus)/2 || len(a.CPUs) != a.Threads || b.CPUs[0] != cpus[len(cpus)/2] || a.CPUs[0] != cpus[0] {
			t.Errorf("two devices: %+v %+v", a, b)
		}
	}
	many := make([]string, len(cpus)+1)
	for i := range many {
		many[i] = "d" + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	for _, d := range pipebench.DefaultDevices(many) {
		if d.Threads != 1 || d.CPUs != nil {
			t.Errorf("more devices than CPUs: %+v", d)
		}
	}
}

// Real inputs from .npy files replace the random ones; a file that does not fit the model is
// refused before anything runs.
func TestBenchInputs(t *testing.T) {
	needORT(t)
	dir, c := planDir(t, hostDevices())
	man, err := emit.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	in := man.Model.Inputs[0]
	dims := graph.Shape(in.Shape).Dims()
	n := int64(4)
	for _, d := range dims {
		n *= d
	}
	write := func(name string, a *npy.Array) string {
		p := filepath.Join(t.TempDir(), name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := npy.Write(f, a); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("x.npy", &npy.Array{DType: graph.Float, Shape: dims, Data: make([]byte, n)})
	// (Devices that are not the plan's are said to be so.)
	rep, err := pipebench.Run(context.Background(), dir, pipebench.Options{Requests: 4, Warmup: 2, Devices: []pipebench.Device{{Name: "elsewhere", Threads: 1}},
		Inputs: map[string]string{in.Name: good}})
	if err != nil || rep.Requests != 4 {
		t.Fatalf("bench with %s: %v", good, err)
	}
	if notes := strings.Join(rep.Notes, "\n"); !strings.Contains(notes, "the devices given (elsewhere) do not include "+man.Stages[0].Device) {
		t.Errorf("notes %q", notes)
	}
	bad := write("i.npy", &npy.Array{DType: graph.Int64, Shape: dims, Data: make([]byte, 2*n)})
	for name, file := range map[string]string{in.Name: bad, "nosuch": good} {
		_, err := pipebench.Run(context.Background(), dir, pipebench.Options{Requests: 4, Devices: pipebench.DevicesFrom(c), Inputs: map[string]string{name: file}})
		var de *diag.Error
		if !errors.As(err, &de) || de.Kind != diag.KindUsage || de.Subject != (diag.Subject{Kind: diag.Option, Name: "Options.Inputs"}) ||
			!strings.Contains(err.Error(), `Options.Inputs["`+name+`"]`) {
			t.Errorf("Inputs[%s] = %s: %v, want a usage *diag.Error about Options.Inputs", name, file, err)
		}
	}
}

// A batched plan runs every route, each taking requests in proportion to its inputs, and is
// compared by throughput and batch time.
func TestBenchBatched(t *testing.T) {
	needORT(t)
	dir, c := planDirOpt(t, hostDevices(), onnxpart.Options{Batch: 4})
	man, err := emit.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if man.Batch == nil || len(man.Batch.Routes) < 2 {
		t.Skipf("the batched plan has %v routes: nothing to check", man.Batch)
	}
	const n = 20
	rep, err := pipebench.Run(context.Background(), dir, pipebench.Options{Requests: n, Warmup: 2, Devices: pipebench.DevicesFrom(c)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Routes != len(man.Batch.Routes) || rep.Batch == nil || rep.Batch.Inputs != man.Batch.Inputs || rep.Batch.TimeS.Planned == nil {
		t.Fatalf("report: routes %d, batch %+v", rep.Routes, rep.Batch)
	}
	if rep.Throughput.Planned == nil || *rep.Throughput.Planned != man.Batch.ThroughputPerS {
		t.Errorf("throughput %+v, the batch plans %g/s", rep.Throughput, man.Batch.ThroughputPerS)
	}
	// Every route ran its share of the measured requests (admitted in weighted round robin;
	// the window of completions may hold up to the in-flight cap more of one route).
	runs := map[int]int{}
	for _, s := range rep.StageTimes {
		if s.Stage == 0 {
			runs[s.Route] = s.Runs
		}
	}
	total := 0
	for i, rt := range man.Batch.Routes {
		share := float64(n) * float64(rt.Inputs) / float64(man.Batch.Inputs)
		if abs(float64(runs[i])-share) > float64(rep.InFlight)+0.01 {
			t.Errorf("route %d ran %d of %d measured requests, its share is %.1f", i, runs[i], n, share)
		}
		total += runs[i]
	}
	if total != n {
		t.Errorf("the routes ran %d measured requests, want %d", total, n)
	}
	doc, _ := json.Marshal(rep)
	if err := schema.ValidateStrict("bench.v1", doc); err != nil {
		t.Error(err)
	}
}
