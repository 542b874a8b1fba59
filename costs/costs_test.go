package costs

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit/schema"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/measure"
	"github.com/onnxpart/onnxpart/internal/stats"
	"github.com/onnxpart/onnxpart/profile"
)

func loadModel(t *testing.T) *graph.Graph {
	t.Helper()
	m, err := ingest.Load(filepath.Join("..", "testdata", "models", "resnet50_small.onnx"), ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m.Graph
}

// cpu is a host-like CPU device with round figures.
func cpu(name, product string, threads int) profile.Device {
	d := profile.Device{Name: name, Model: product, Kind: profile.CPU, Threads: threads, Host: true,
		Bandwidth: profile.Figure{Value: 20e9, Source: profile.SourceHost}, Launch: profile.Figure{Value: 1e-6, Source: profile.SourceDefault},
		RunOverhead: profile.Figure{Value: 5e-6, Source: profile.SourceDefault}}
	for p := profile.FP32; p < profile.NumPrecisions; p++ {
		d.Peak[p] = profile.Figure{Value: 100e9 * float64(threads), Source: profile.SourceHost}
	}
	return d
}

func cluster(devs ...profile.Device) *profile.Cluster {
	c := &profile.Cluster{Devices: devs}
	for i := range devs {
		row := make([]profile.Link, len(devs))
		for j := range row {
			row[j] = profile.Link{Kind: profile.LinkMemory, Bandwidth: profile.Figure{Value: 10e9}}
			if i == j {
				row[j] = profile.Link{Kind: profile.LinkSelf}
			}
		}
		c.Links = append(c.Links, row)
	}
	return c
}

// measurement gives node v the time (v+1)·scale µs: distinct per node, so that a lookup that
// takes the wrong node's time shows.
func measurement(g *graph.Graph, scale float64) *profile.Measurement {
	m := &profile.Measurement{Model: "resnet50_small.onnx", Threads: 1, Node: make([]float64, len(g.Nodes)), Overhead: 4e-6,
		IO: profile.IOCost{Fixed: 4e-6, PerByte: 1e-10}}
	for v := range m.Node {
		m.Node[v] = float64(v+1) * scale * 1e-6
	}
	return m
}

// file is a cost file of one device measured on g.
func file(t *testing.T, g *graph.Graph, d profile.Device, scale float64) *File {
	meas := measurement(g, scale)
	cal := profile.Calibrate(&d, []profile.Sample{{Graph: g, Measured: meas}})
	return &File{Date: "2026-01-02", Producer: "test", ONNXRuntime: "1.30.0",
		Models:  []Model{{Name: "resnet50_small.onnx", SHA256: strings.Repeat("ab", 32), Nodes: len(g.Nodes)}},
		Devices: []Device{Describe(&d, "CPUExecutionProvider", "", cal, []Sample{{Name: "resnet50_small.onnx", Graph: g, Measured: meas}})}}
}

func writeRead(t *testing.T, f *File) *Loaded {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.json")
	if err := Write(p, f); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	if err := schema.ValidateStrict(SchemaName, data); err != nil {
		t.Fatalf("written file against %s: %v", SchemaName, err)
	}
	l, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A signature names what the time depends on and nothing else: not the names of nodes and
// tensors, not the order attributes are stored in; a different shape, attribute value or
// producer gives another signature.
func TestSignature(t *testing.T) {
	g := loadModel(t)
	conv := -1
	for v := range g.Nodes {
		if g.Nodes[v].OpType == "Conv" && len(g.Nodes[v].Attrs) > 1 {
			conv = v
			break
		}
	}
	if conv < 0 {
		t.Fatal("no Conv with attributes")
	}
	before := Signature(g, conv)
	if !strings.HasPrefix(before, "Conv(float32[") || !strings.Contains(before, "#w") || !strings.Contains(before, "){") {
		t.Fatalf("signature %q", before)
	}
	n := &g.Nodes[conv]
	n.Name = "renamed"
	for _, x := range append(append([]int{}, n.Inputs...), n.Outputs...) {
		if x >= 0 {
			g.Tensors[x].Name += "_renamed"
		}
	}
	for i, j := 0, len(n.Attrs)-1; i < j; i, j = i+1, j-1 {
		n.Attrs[i], n.Attrs[j] = n.Attrs[j], n.Attrs[i]
	}
	if got := Signature(g, conv); got != before {
		t.Errorf("names and attribute order changed the signature:\n%s\n%s", before, got)
	}
	saved := n.Attrs[0]
	n.Attrs[0].Ints = append([]int64{}, saved.Ints...)
	n.Attrs[0].Int++
	if len(n.Attrs[0].Ints) > 0 {
		n.Attrs[0].Ints[0]++
	}
	if Signature(g, conv) == before {
		t.Errorf("attribute %s changed, the signature did not", saved.Name)
	}
	n.Attrs[0] = saved
	out := n.Outputs[0]
	shape := g.Tensors[out].Shape
	g.Tensors[out].Shape = append(graph.Shape{}, shape...)
	g.Tensors[out].Shape[0] = graph.Dim{Value: 2}
	if Signature(g, conv) == before {
		t.Error("the output shape changed, the signature did not")
	}
	g.Tensors[out].Shape = shape
	// Same op and shapes after a different producer.
	for v := range g.Nodes {
		a := &g.Nodes[v]
		if a.OpType != "Relu" || len(a.Inputs) == 0 {
			continue
		}
		p := g.Tensors[a.Inputs[0]].Producer
		if p < 0 {
			continue
		}
		s := Signature(g, v)
		old := g.Nodes[p].OpType
		g.Nodes[p].OpType = "Add"
		if Signature(g, v) == s {
			t.Errorf("the producer of %s changed from %s to Add, the signature did not", a.Name, old)
		}
		g.Nodes[p].OpType = old
		break
	}
}

// Devices match by identity and name, then identity, then name (with a note); the node times
// are the files' for the nodes' signatures, in file order; unmatched devices and files are
// noted once each.
func TestApply(t *testing.T) {
	g := loadModel(t)
	a := file(t, g, cpu("cpu0", "Example CPU", 1), 1)
	b := file(t, g, cpu("cpu1", "Example CPU", 1), 3)
	la, lb := writeRead(t, a), writeRead(t, b)
	la.Path, lb.Path = "a.json", "b.json"

	// Each device takes the file of its name and identity.
	c := cluster(cpu("cpu0", "Example CPU", 1), cpu("cpu1", "Example CPU", 1))
	ap := Apply(c, g, []*Loaded{la, lb}, "1.30.0")
	if len(ap.Notes) != 0 {
		t.Errorf("notes %q", ap.Notes)
	}
	counted := 0
	for v := range g.Nodes {
		if g.Nodes[v].Static {
			if !math.IsNaN(ap.Measured[0][v]) {
				t.Errorf("static node %d has a time", v)
			}
			continue
		}
		// Repeated signatures keep the median of their occurrences: check the unique ones.
		if countSig(g, Signature(g, v)) > 1 {
			continue
		}
		counted++
		want0, want1 := float64(v+1)*1e-6, float64(v+1)*3e-6
		if math.Abs(ap.Measured[0][v]-want0) > 1e-12 || math.Abs(ap.Measured[1][v]-want1) > 1e-12 {
			t.Fatalf("node %d: %g, %g; want %g, %g", v, ap.Measured[0][v], ap.Measured[1][v], want0, want1)
		}
	}
	if counted < 10 {
		t.Fatalf("only %d nodes with a unique signature", counted)
	}
	if ap.Calibrated[0] != 0 || ap.Calibrated[1] != 1 {
		t.Errorf("calibrated from %v", ap.Calibrated)
	}
	if c.Devices[0].RunOverhead.Value != a.Devices[0].Call.OverheadS || c.Devices[0].RunOverhead.Source != profile.SourceMeasured {
		t.Errorf("run overhead %+v, file %g", c.Devices[0].RunOverhead, a.Devices[0].Call.OverheadS)
	}
	cm := profile.NewCostModel(c, profile.CostOptions{Measured: ap.Measured})
	on := make([]int, len(g.Nodes))
	for v := range on {
		on[v] = v % 2
	}
	line := ap.Line(ap.Shares(g, cm, on))
	if !strings.Contains(line, "measured (a.json)") || !strings.Contains(line, "measured (b.json)") {
		t.Errorf("share line %q", line)
	}

	// Identity alone: a file of "cpu" applies to both devices of the same CPU.
	one := file(t, g, cpu("cpu", "Example CPU", 1), 1)
	lo := writeRead(t, one)
	lo.Path = "one.json"
	c = cluster(cpu("cpu0", "Example CPU", 1), cpu("cpu1", "Example CPU", 1))
	ap = Apply(c, g, []*Loaded{lo}, "1.30.0")
	if ap.Calibrated[0] != 0 || ap.Calibrated[1] != 0 || len(ap.Notes) != 0 {
		t.Errorf("identity match: calibrated %v, notes %q", ap.Calibrated, ap.Notes)
	}

	// Another product under the same name, another ONNX Runtime, a device no file describes
	// and a file that describes none: one note each.
	other := file(t, g, cpu("cpu0", "Other CPU", 1), 1)
	other.ONNXRuntime = "1.17.0"
	lx := writeRead(t, other)
	lx.Path = "other.json"
	gpuFile := file(t, g, profile.Device{Name: "gpu0", Model: "Some GPU", Kind: profile.GPU}, 1)
	lg := writeRead(t, gpuFile)
	lg.Path = "gpu.json"
	c = cluster(cpu("cpu0", "Example CPU", 1), cpu("cpu1", "Example CPU", 2))
	ap = Apply(c, g, []*Loaded{lx, lg}, "1.30.0")
	want := []string{ // with their kinds: mismatch, mismatch, skipped, approximation
		"cost file other.json: measured with ONNX Runtime 1.17.0, this onnxpart runs 1.30.0",
		"cost file other.json: applied by device name to a device other than the one measured: cpu0 (measured on Other CPU, 1 thread(s); here Example CPU, 1 thread(s))",
		"cost file gpu.json describes none of the devices (it has gpu0 (Some GPU)): unused",
		"no cost file describes cpu1 (Example CPU, 2 thread(s))",
	}
	kinds := []diag.NoteKind{diag.NoteMismatch, diag.NoteMismatch, diag.NoteSkipped, diag.NoteApprox}
	if len(ap.Notes) != len(want) {
		t.Fatalf("notes:\n%s", strings.Join(diag.NoteStrings(ap.Notes), "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(ap.Notes[i].Msg, want[i]) || ap.Notes[i].Kind != kinds[i] {
			t.Errorf("note %d:\n got %s (%s)\nwant %s… (%s)", i, ap.Notes[i].Msg, ap.Notes[i].Kind, want[i], kinds[i])
		}
	}
	if ap.Measured[1] != nil || ap.Calibrated[1] != -1 {
		t.Error("cpu1 took a file")
	}
	cm = profile.NewCostModel(c, profile.CostOptions{Measured: ap.Measured})
	for v := range on {
		on[v] = 1
	}
	if line := ap.Line(ap.Shares(g, cm, on)); line != "costs: 100% roofline" {
		t.Errorf("all on cpu1: %q", line)
	}
}

func countSig(g *graph.Graph, s string) int {
	n := 0
	for v := range g.Nodes {
		if !g.Nodes[v].Static && Signature(g, v) == s {
			n++
		}
	}
	return n
}

// A malformed file is one usage error (exit 2) naming the file and the line of the fault.
func TestReadFaults(t *testing.T) {
	g := loadModel(t)
	good := writeRead(t, file(t, g, cpu("cpu", "Example CPU", 1), 1))
	data, _ := os.ReadFile(good.Path)
	text := string(data)
	lineOfText := func(sub string) int {
		i := strings.Index(text, sub)
		if i < 0 {
			t.Fatalf("%q not in the file", sub)
		}
		return strings.Count(text[:i], "\n") + 1
	}
	firstTime := text[strings.Index(text, `"measured_s": `):]
	firstTime = strings.TrimSuffix(firstTime[:strings.Index(firstTime, "\n")], ",")
	cases := []struct {
		name, text, msg string
		line            int
	}{
		{"negative time", strings.Replace(text, firstTime, `"measured_s": -1`, 1), "at /devices/0/entries/0/measured_s: minimum", lineOfText(firstTime)},
		{"a string for a time", strings.Replace(text, firstTime, `"measured_s": "fast"`, 1), "at /devices/0/entries/0/measured_s:", lineOfText(firstTime)},
		{"wrong format", strings.Replace(text, Format, "onnxpart.manifest/v1", 1), `format "onnxpart.manifest/v1", want "onnxpart.costs/v1"`, 2},
		{"cut short", text[:len(text)/2], "invalid JSON", 0},
		{"no devices", strings.Replace(text, `"devices"`, `"device"`, 1), "missing property 'devices'", 1},
		{"no identity", strings.Replace(text, `"identity"`, `"ident"`, 1), "at /devices/0: missing property", lineOfText(`"name": "cpu"`) - 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "bad.json")
			os.WriteFile(p, []byte(c.text), 0o644)
			_, err := Read(p)
			var de *diag.Error
			if !errors.As(err, &de) || de.Kind != diag.KindUsage || diag.ExitCode(err) != 2 {
				t.Fatalf("error %v (%T), want a usage error", err, err)
			}
			if de.Subject.Kind != diag.File || de.Subject.Name != p {
				t.Errorf("subject %+v", de.Subject)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q, want %q", err, c.msg)
			}
			if c.line > 0 && de.Subject.Line != c.line {
				t.Errorf("line %d, want %d (%v)", de.Subject.Line, c.line, err)
			}
			if c.name == "cut short" && de.Subject.Line == 0 {
				t.Errorf("no line for a syntax error: %v", err)
			}
		})
	}
}

// Merge adds what a file lacks and keeps what it has; a device of the same name and another
// identity is refused.
func TestMerge(t *testing.T) {
	g := loadModel(t)
	a := file(t, g, cpu("cpu", "Example CPU", 1), 1)
	b := file(t, g, cpu("cpu", "Example CPU", 1), 5)
	b.Models[0].SHA256 = strings.Repeat("cd", 32)
	b.Devices[0].Entries = append(b.Devices[0].Entries, Entry{Signature: "New()->(){}", Op: "New", Class: "other", TimeS: 1e-6, Count: 1})
	n := len(a.Devices[0].Entries)
	first := a.Devices[0].Entries[0]
	b.Devices[0].Classes["newclass"] = ClassFit{Eff: 0.5, MemEff: 0.5, Nodes: 3}
	var oldClass string
	for c := range a.Devices[0].Classes {
		oldClass = c
	}
	oldFit := a.Devices[0].Classes[oldClass]
	b.Devices[0].Classes[oldClass] = ClassFit{Eff: 0.001, MemEff: 0.001, Nodes: 3}
	if err := Merge(a, b); err != nil {
		t.Fatal(err)
	}
	if len(a.Models) != 2 || len(a.Devices) != 1 || len(a.Devices[0].Entries) != n+1 {
		t.Fatalf("models %d, devices %d, entries %d (was %d)", len(a.Models), len(a.Devices), len(a.Devices[0].Entries), n)
	}
	for _, e := range a.Devices[0].Entries {
		if e.Signature == first.Signature && e.TimeS != first.TimeS {
			t.Errorf("an entry the file had was replaced")
		}
	}
	if _, ok := a.Devices[0].Classes["newclass"]; !ok {
		t.Error("a fitted class the file lacked was not added")
	}
	if a.Devices[0].Classes[oldClass] != oldFit {
		t.Errorf("the file's fit of %s was replaced", oldClass)
	}
	c := file(t, g, cpu("cpu", "Other CPU", 1), 1)
	if err := Merge(a, c); err == nil {
		t.Error("merged a device of another identity under the same name")
	}
}

// One cost path: a model measured in ONNX Runtime, written to a file, read back and applied
// to a fresh copy of the device prices every node as the measurement applied directly does
// (--costs measured: Calibration.Apply and the measured node times), up to repeated
// signatures, which carry the median of their occurrences; and the whole graph's stage time
// agrees within 5% (the medians).
func TestFileMatchesMeasurement(t *testing.T) {
	if testing.Short() {
		t.Skip("measures in ONNX Runtime")
	}
	g := loadModel(t)
	path := filepath.Join("..", "testdata", "models", "resnet50_small.onnx")
	dev := cpu("cpu", "Example CPU", 1)
	io := profile.IOCost{Fixed: 5e-6, PerByte: 2e-10}
	meas, err := measure.MeasureORT(context.Background(), path, g, measure.MeasureOptions{Threads: 1, IO: &io, Runs: 5, Warmup: 1})
	if err != nil {
		t.Fatal(err)
	}
	cal := profile.Calibrate(&dev, []profile.Sample{{Graph: g, Measured: meas}})
	direct := dev
	cal.Apply(&direct)
	cd := cluster(direct)
	cmDirect := profile.NewCostModel(cd, profile.CostOptions{Measured: [][]float64{meas.NodeTimes()}})

	f := &File{Date: "2026-01-02", Producer: "test", ONNXRuntime: "1.30.0", Models: []Model{{Name: "resnet50_small.onnx", SHA256: strings.Repeat("ab", 32), Nodes: len(g.Nodes)}},
		Devices: []Device{Describe(&dev, "CPUExecutionProvider", "", cal, []Sample{{Name: "resnet50_small.onnx", Graph: g, Measured: meas}})}}
	l := writeRead(t, f)
	fresh := cluster(cpu("cpu", "Example CPU", 1))
	ap := Apply(fresh, g, []*Loaded{l}, "")
	cmFile := profile.NewCostModel(fresh, profile.CostOptions{Measured: ap.Measured})
	for _, fig := range []struct {
		name string
		a, b float64
	}{{"run overhead", cd.Devices[0].RunOverhead.Value, fresh.Devices[0].RunOverhead.Value},
		{"io bandwidth", cd.Devices[0].IOBandwidth.Value, fresh.Devices[0].IOBandwidth.Value},
		{"layout bandwidth", cd.Devices[0].LayoutBandwidth.Value, fresh.Devices[0].LayoutBandwidth.Value}} {
		if math.Abs(fig.a-fig.b) > 1e-9*math.Abs(fig.a) {
			t.Errorf("%s: measured %g, from the file %g", fig.name, fig.a, fig.b)
		}
	}
	// A node's time from the file is its signature's median over the model's nodes of that
	// signature (exactly the measured time when the signature is unique): checked node by
	// node, so the check does not depend on how much the measured times scatter.
	bySig := map[string][]float64{}
	for v := range g.Nodes {
		if !g.Nodes[v].Static {
			sig := Signature(g, v)
			bySig[sig] = append(bySig[sig], cmDirect.NodeTime(g, v, 0))
		}
	}
	var sumA, sumB float64
	for v := range g.Nodes {
		a, b := cmDirect.NodeTime(g, v, 0), cmFile.NodeTime(g, v, 0)
		sumA += a
		sumB += b
		if g.Nodes[v].Static {
			continue
		}
		if want := stats.Median(bySig[Signature(g, v)]); math.Abs(want-b) > 1e-12+1e-9*want {
			t.Errorf("node %d (%s): from the file %g, the median of its signature's measured times %g (own %g)", v, g.Nodes[v].OpType, b, want, a)
		}
	}
	t.Logf("sum of node times: measured %.1f µs, from the file %.1f µs", sumA*1e6, sumB*1e6)
}
