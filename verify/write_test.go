package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/testmodel"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// The tests of emit.Write whose outputs are then checked with Check and Run: they live here,
// not in emit, because verify imports emit: emit's in-package tests cannot import it.

// TestWriteSymlinkAtTarget: a symbolic link at the output path is never followed. Without
// --force it is refused and left as it is; with --force the link itself is replaced by the
// output directory and what it pointed to (a directory, a file, nothing) is untouched.
func TestWriteSymlinkAtTarget(t *testing.T) {
	for _, kind := range []string{"directory", "file", "dangling"} {
		t.Run(kind, func(t *testing.T) {
			root := t.TempDir()
			victim := filepath.Join(root, "victim")
			switch kind {
			case "directory":
				os.Mkdir(victim, 0o755)
				os.WriteFile(filepath.Join(victim, "keep.txt"), []byte("mine"), 0o644)
			case "file":
				os.WriteFile(victim, []byte("mine"), 0o644)
			}
			before := testmodel.ListTree(t, root)
			out := filepath.Join(root, "out")
			if err := os.Symlink(victim, out); err != nil {
				t.Fatal(err)
			}
			before = append(before, "out")
			sort.Strings(before)

			err := prepared(t, "squeezenet1_1_small.onnx", 2, emit.Options{}).WriteDir(out)
			if !isKind(err, diag.KindInput) || !strings.Contains(err.Error(), "is a symbolic link") {
				t.Fatalf("without --force: %v", err)
			}
			if got := testmodel.ListTree(t, root); strings.Join(got, " ") != strings.Join(before, " ") {
				t.Errorf("without --force, the tree changed: %v, was %v", got, before)
			}
			if target, err := os.Readlink(out); err != nil || target != victim {
				t.Errorf("the link changed: %q, %v", target, err)
			}

			if err := prepared(t, "squeezenet1_1_small.onnx", 2, emit.Options{Force: true}).WriteDir(out); err != nil {
				t.Fatalf("with --force: %v", err)
			}
			fi, err := os.Lstat(out)
			if err != nil || !fi.IsDir() {
				t.Fatalf("after --force, %s is %v (%v), want a directory", out, fi.Mode(), err)
			}
			if _, err := Check(out); err != nil {
				t.Error(err)
			}
			var want []string
			for _, p := range before {
				if p != "out" {
					want = append(want, p)
				}
			}
			want = append(want, "out", "out/manifest.json", "out/stage0.onnx", "out/stage1.onnx")
			sort.Strings(want)
			if got := testmodel.ListTree(t, root); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("after --force: %v, want %v", got, want)
			}
			if kind != "dangling" {
				if b, err := os.ReadFile(filepath.Join(victim, map[string]string{"directory": "keep.txt", "file": ""}[kind])); err != nil || string(b) != "mine" {
					t.Errorf("what the link pointed to changed: %q, %v", b, err)
				}
			}
		})
	}
}

// hostileNames are graph and tensor names that must never reach the file system.
var hostileNames = []string{
	"../../../../../../tmp/onnxpart-escape",
	"/etc/passwd",
	"..",
	".",
	`..\..\windows\system32`,
	"a/b/../../../c",
	"ctl\x01\x07\x08\t\n\r\x1b[31m\x7fend",
	strings.Repeat("long/", 2000) + "name",
	"stage1.onnx",
	"manifest.json",
}

// TestWriteNamesFromModel: graph, node, tensor and weight names taken from the model are
// data, never file names. A model whose names are paths ("../", "/"), control characters,
// very long names or the names of our own files writes exactly manifest.json and
// stage<i>.onnx(.data) into the output directory and nothing anywhere else; the manifest
// carries the names verbatim and the directory passes Check (and verifies, with ORT).
func TestWriteNamesFromModel(t *testing.T) {
	n := len(hostileNames)
	name := func(i int) string { return hostileNames[i%n] + "#" + string(rune('A'+i)) }
	// x → Add(w_i) → … (n nodes), each output and weight named after a hostile name.
	g := &onnxpb.GraphProto{Name: proto.String(hostileNames[0])}
	prev := name(0)
	g.Input = []*onnxpb.ValueInfoProto{testmodel.VInfo(prev, graph.Float, 1, 256)}
	for i := 1; i <= n; i++ {
		w := "w:" + name(i)
		vals := make([]float32, 256)
		for j := range vals {
			vals[j] = float32(i*j%7) - 3
		}
		g.Initializer = append(g.Initializer, testmodel.FloatTensor(w, []int64{1, 256}, vals...)) // 1 KiB: external with ExternalAlways
		out := name(i + n)
		g.Node = append(g.Node, testmodel.Node("Add", hostileNames[i-1], []string{prev, w}, []string{out}))
		prev = out
	}
	g.Output = []*onnxpb.ValueInfoProto{testmodel.VInfo(prev, graph.Float, 1, 256)}
	mp := &onnxpb.ModelProto{IrVersion: proto.Int64(8), OpsetImport: testmodel.Opsets(), Graph: g,
		ProducerName: proto.String(hostileNames[1]), DocString: proto.String(hostileNames[6])}
	m := testmodel.LoadPath(t, testmodel.WriteModel(t, mp))

	for _, mode := range []emit.ExternalDataMode{emit.ExternalAuto, emit.ExternalAlways} {
		root := t.TempDir()
		out := filepath.Join(root, "out")
		stage, err := emit.EqualFLOPs(m.Graph, 3)
		if err != nil {
			t.Fatal(err)
		}
		man, err := emit.Write(m, &emit.Assignment{Stage: stage}, out, emit.Options{ExternalData: mode})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"out", "out/manifest.json"}
		for _, st := range man.Stages {
			want = append(want, "out/"+stageFile(st.Index))
			if mode == emit.ExternalAlways {
				want = append(want, "out/"+dataFile(st.Index))
			}
		}
		sort.Strings(want)
		if got := testmodel.ListTree(t, root); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("mode %d: files %q, want %q", mode, got, want)
		}
		if esc, _ := filepath.Glob("/tmp/onnxpart-escape*"); len(esc) > 0 {
			t.Errorf("written outside the output directory: %v", esc)
		}
		read, err := Check(out)
		if err != nil {
			t.Fatal(err)
		}
		js, _ := os.ReadFile(filepath.Join(out, emit.ManifestFile))
		if !json.Valid(js) {
			t.Fatal("manifest.json is not valid JSON")
		}
		// Every name is carried verbatim: tensors and weights in the stage files, boundary
		// tensors in the manifest too.
		inFiles := map[string]bool{}
		for _, st := range read.Stages {
			smp := stageModelOf(t, out, st)
			for _, nd := range smp.Graph.Node {
				inFiles[nd.GetName()] = true
				for _, o := range nd.Output {
					inFiles[o] = true
				}
			}
			for _, w := range smp.Graph.Initializer {
				inFiles[w.GetName()] = true
			}
			for _, r := range st.Outputs {
				if !inFiles[r.Name] {
					t.Errorf("mode %d: manifest output %q is not in stage %d's file", mode, r.Name, st.Index)
				}
			}
		}
		for i := 1; i <= n; i++ {
			for _, want := range []string{name(i + n), "w:" + name(i), hostileNames[i-1]} {
				if !inFiles[want] {
					t.Errorf("mode %d: name %q did not survive", mode, want)
				}
			}
		}
		if len(read.Transfers) == 0 {
			t.Errorf("mode %d: no tensor crosses a stage boundary", mode)
		}
		verifyIfORT(t, out)
	}
}

// verifyIfORT runs Run on dir when ONNX Runtime is available.
func verifyIfORT(t *testing.T, dir string) {
	t.Helper()
	if !ortAvailable() {
		return
	}
	rep, err := Run(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Pass {
		t.Error(MismatchOf(rep).Error())
	}
}

// TestVerifyRefusesHugeTensors: a model declaring a 10^12-element input (4 TB of floats),
// or a small input that a node expands to 10^12 float16 elements, is refused by Run from
// its declared shapes, quickly and without allocating; the limit is configurable, and
// RandomFeeds keeps the default one.
func TestVerifyRefusesHugeTensors(t *testing.T) {
	// Each model is x → r1 → … → r2 → y, cut right before its last node.
	write := func(g *onnxpb.GraphProto) (*ingest.Model, string) {
		mp := &onnxpb.ModelProto{IrVersion: proto.Int64(8), OpsetImport: testmodel.Opsets(), Graph: g}
		m := testmodel.LoadPath(t, testmodel.WriteModel(t, mp))
		out := filepath.Join(t.TempDir(), "out")
		stage := make([]int, len(m.Graph.Nodes))
		stage[len(stage)-1] = 1
		if _, err := emit.Write(m, &emit.Assignment{Stage: stage}, out, emit.Options{}); err != nil {
			t.Fatal(err)
		}
		return m, out
	}
	bigIn, bigInDir := write(&onnxpb.GraphProto{Name: proto.String("big_input"),
		Input:  []*onnxpb.ValueInfoProto{testmodel.VInfo("x", graph.Float, 1000000, 1000000)},
		Output: []*onnxpb.ValueInfoProto{testmodel.VInfo("y", graph.Float, 1000000, 1000000)},
		Node: []*onnxpb.NodeProto{testmodel.Node("Relu", "r1", []string{"x"}, []string{"a"}),
			testmodel.Node("Relu", "r2", []string{"a"}, []string{"y"})}})
	shape := &onnxpb.TensorProto{Name: proto.String("shape"), Dims: []int64{2}, DataType: proto.Int32(int32(graph.Int64)),
		Int64Data: []int64{1000000, 1000000}}
	_, bigOutDir := write(&onnxpb.GraphProto{Name: proto.String("big_output"),
		Input:       []*onnxpb.ValueInfoProto{testmodel.VInfo("x", graph.Float16, 1, 1)},
		Output:      []*onnxpb.ValueInfoProto{testmodel.VInfo("y", graph.Float16, 1000000, 1000000)},
		Initializer: []*onnxpb.TensorProto{shape},
		Node: []*onnxpb.NodeProto{testmodel.Node("Relu", "r1", []string{"x"}, []string{"a"}),
			testmodel.Node("Expand", "e", []string{"a", "shape"}, []string{"b"}),
			testmodel.Node("Relu", "r2", []string{"b"}, []string{"y"})}})

	for _, tc := range []struct {
		dir, want string
	}{
		{bigInDir, `model input "x" (float32 [1000000,1000000]) would take 4000000000000 bytes`},
		{bigOutDir, `stage boundary tensor "b" (float16 [1000000,1000000]) would take 2000000000000 bytes`},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Run(context.Background(), tc.dir, Options{})
		runtime.ReadMemStats(&after)
		var se *diag.Error
		if !errors.As(err, &se) || se.Kind != diag.KindInput || se.Subject.Kind != diag.Tensor || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want a one-line input error about a tensor mentioning %q", tc.dir, err, tc.want)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
			t.Errorf("%s: refusing allocated %d bytes", tc.dir, grew)
		}
	}
	if _, err := RandomFeeds(bigIn.Graph, 1); !isKind(err, diag.KindInput) || !strings.Contains(err.Error(), "over the") {
		t.Errorf("RandomFeeds: %v", err)
	}

	// The limit is configurable: a corpus model is refused one byte under its largest input,
	// boundary or output tensor, and passes at exactly that size.
	l := prepared(t, "squeezenet1_1_small.onnx", 2, emit.Options{})
	out := filepath.Join(t.TempDir(), "sq")
	if err := l.WriteDir(out); err != nil {
		t.Fatal(err)
	}
	var largest int64
	for _, r := range append(append([]emit.TensorRef{}, l.Manifest.Model.Inputs...), l.Manifest.Model.Outputs...) {
		largest = max(largest, r.Bytes)
	}
	for _, tr := range l.Manifest.Transfers {
		largest = max(largest, tr.Bytes)
	}
	_, err := Run(context.Background(), out, Options{MaxTensorBytes: largest - 1})
	if !isKind(err, diag.KindInput) || !strings.Contains(err.Error(), fmt.Sprintf("%d bytes in memory, over the %d-byte limit", largest, largest-1)) {
		t.Errorf("limit %d: %v", largest-1, err)
	}
	if ortAvailable() {
		if rep, err := Run(context.Background(), out, Options{MaxTensorBytes: largest}); err != nil || !rep.Pass {
			t.Errorf("limit %d: %v", largest, err)
		}
	}
}

// TestCheckDataFileStaysInside: Check (and so Run) reads a stage's data file only when
// the manifest names a plain file in the directory, and only a regular file: a manifest
// naming "../secret" or a FIFO is a problem, not a read (a FIFO would block).
func TestCheckDataFileStaysInside(t *testing.T) {
	l := prepared(t, "squeezenet1_1_small.onnx", 2, emit.Options{ExternalData: emit.ExternalAlways})
	root := t.TempDir()
	out := filepath.Join(root, "out")
	if err := l.WriteDir(out); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "secret"), []byte("secret"), 0o644)
	if err := syscall.Mkfifo(filepath.Join(out, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, want string }{
		{"../secret", `bad data file name "../secret"`},
		{filepath.Join(root, "secret"), "bad data file name"},
		{"fifo", "fifo is not a regular file"},
	} {
		man, err := emit.ReadManifest(out)
		if err != nil {
			t.Fatal(err)
		}
		withData := -1
		for i, st := range man.Stages {
			if st.DataFile != "" && withData < 0 {
				withData = i
			}
		}
		if withData < 0 {
			t.Fatal("no stage has a data file")
		}
		man.Stages[withData].DataFile = tc.file
		js, _ := man.MarshalIndent()
		os.WriteFile(filepath.Join(out, emit.ManifestFile), js, 0o644)
		done := make(chan error, 1)
		go func() { _, err := Check(out); done <- err }()
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("data file %q: Check did not return within 30s", tc.file)
		}
		var ce *diag.Error
		if !errors.As(err, &ce) || ce.Kind != diag.KindInput || !strings.Contains(strings.Join(ce.Notes, "\n"), tc.want) {
			t.Errorf("data file %q: %v, want a problem mentioning %q", tc.file, err, tc.want)
		}
	}
}

// TestControlFlowEverySplit writes every contiguous split of the control-flow model into 2
// and 3 stages and verifies each chain bit for bit, with both branches of the If taken.
func TestControlFlowEverySplit(t *testing.T) {
	needORT(t)
	m := testmodel.LoadPath(t, testmodel.ControlFlowModel(t))
	g := m.Graph
	order := g.TopoOrder()
	n := len(order)
	var cases [][]int
	for i := 1; i < n; i++ {
		cases = append(cases, []int{i})
		for j := i + 1; j < n; j++ {
			cases = append(cases, []int{i, j})
		}
	}
	ref := NewReferenceCache()
	defer ref.Close()
	for _, bounds := range cases {
		stage := testmodel.StagesFromBounds(g, order, bounds)
		dir := filepath.Join(t.TempDir(), "out")
		man, err := emit.Write(m, &emit.Assignment{Stage: stage}, dir, emit.Options{})
		if err != nil {
			t.Fatalf("bounds %v: %v", bounds, err)
		}
		// Two seeds give both values of cond (bool input: random 0/1).
		for seed := int64(0); seed < 4; seed++ {
			rep, err := Run(context.Background(), dir, Options{Seed: seed, Reference: ref})
			if err != nil {
				t.Fatalf("bounds %v: %v", bounds, err)
			}
			if !rep.Pass {
				t.Errorf("bounds %v seed %d: %v", bounds, seed, MismatchOf(rep).Error())
			}
		}
		// Structural facts.
		for _, st := range man.Stages {
			mp := stageModelOf(t, dir, st)
			hasIf, hasSquare := false, false
			for _, nd := range mp.Graph.Node {
				hasIf = hasIf || nd.GetOpType() == "If"
				hasSquare = hasSquare || nd.GetOpType() == "Square"
			}
			if hasIf && !hasWeight(mp, "w") {
				t.Errorf("bounds %v: stage %d runs the If but lacks the captured weight w", bounds, st.Index)
			}
			if hasIf && !hasInput(st, "a") && !producesLocally(mp, "a") {
				t.Errorf("bounds %v: stage %d runs the If but neither reads nor computes its capture a", bounds, st.Index)
			}
			if hasSquare != (len(mp.Functions) == 1) || (hasSquare && mp.Functions[0].GetName() != "Square") {
				t.Errorf("bounds %v: stage %d has functions %v (Square node: %v)", bounds, st.Index, funcNames(mp), hasSquare)
			}
			if got := testmodel.Metadata(mp)["onnxpart.source_model"]; got != "model.onnx" || testmodel.Metadata(mp)["author"] != "tests" {
				t.Errorf("stage %d metadata %v", st.Index, testmodel.Metadata(mp))
			}
			if mp.GetIrVersion() != 8 || len(mp.OpsetImport) != 2 {
				t.Errorf("stage %d: ir %d, opsets %v", st.Index, mp.GetIrVersion(), mp.OpsetImport)
			}
		}
		// Sigmoid(w2) is computed in every stage that reads s, never sent.
		for _, tr := range man.Transfers {
			if tr.Tensor == "s" {
				t.Errorf("bounds %v: the weight-only tensor s is transferred", bounds)
			}
		}
		last := man.Stages[len(man.Stages)-1]
		if !hasOutput(last, "x") || !hasOutput(last, "w") {
			t.Errorf("bounds %v: the pass-through outputs x and w are not outputs of the last stage", bounds)
		}
	}
}

func hasWeight(mp *onnxpb.ModelProto, name string) bool {
	for _, w := range mp.Graph.Initializer {
		if w.GetName() == name {
			return true
		}
	}
	return false
}

func producesLocally(mp *onnxpb.ModelProto, name string) bool {
	for _, n := range mp.Graph.Node {
		for _, o := range n.Output {
			if o == name {
				return true
			}
		}
	}
	return false
}

func hasOutput(st emit.Stage, name string) bool {
	for _, o := range st.Outputs {
		if o.Name == name {
			return true
		}
	}
	return false
}

func funcNames(mp *onnxpb.ModelProto) []string {
	var out []string
	for _, f := range mp.Functions {
		out = append(out, f.GetName())
	}
	return out
}

// TestOldIRListsWeightsAsInputs: an IR 3 model lists its weights among the graph inputs;
// its stages do the same for the weights they hold, and still verify.
func TestOldIRListsWeightsAsInputs(t *testing.T) {
	needORT(t)
	w := testmodel.FloatTensor("w", []int64{3}, 1, -2, 3)
	g := &onnxpb.GraphProto{Name: proto.String("ir3"),
		Input:       []*onnxpb.ValueInfoProto{testmodel.VInfo("x", graph.Float, 2, 3), testmodel.VInfo("w", graph.Float, 3)},
		Output:      []*onnxpb.ValueInfoProto{testmodel.VInfo("y", graph.Float, 2, 3)},
		Initializer: []*onnxpb.TensorProto{w},
		Node: []*onnxpb.NodeProto{
			testmodel.Node("Relu", "relu", []string{"x"}, []string{"a"}),
			testmodel.Node("Mul", "mul", []string{"a", "w"}, []string{"b"}),
			testmodel.Node("Add", "add", []string{"b", "w"}, []string{"y"}),
		}}
	mp := &onnxpb.ModelProto{IrVersion: proto.Int64(3), Graph: g,
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(9)}}}
	m := testmodel.LoadPath(t, testmodel.WriteModel(t, mp))
	stage := testmodel.Labels(t, m.Graph, map[string]int{"relu": 0, "mul": 1, "add": 2})
	dir := filepath.Join(t.TempDir(), "out")
	man, err := emit.Write(m, &emit.Assignment{Stage: stage}, dir, emit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range man.Stages[1:] {
		sm := stageModelOf(t, dir, st)
		if sm.GetIrVersion() != 3 || len(sm.Graph.Input) != 2 || sm.Graph.Input[1].GetName() != "w" || len(st.Inputs) != 1 {
			t.Errorf("stage %d: ir %d, inputs %v, manifest inputs %v", st.Index, sm.GetIrVersion(), sm.Graph.Input, st.Inputs)
		}
	}
	rep, err := Run(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Pass {
		t.Error(MismatchOf(rep).Error())
	}
}

// TestExternalData: a source with external data gives stages with their own data files
// (relative locations, inside the directory); a size limit moves large weights out of an
// inline source; "never" inlines them. Every variant verifies bit for bit.
func TestExternalData(t *testing.T) {
	needORT(t)
	check := func(name string, l *emit.Layout, wantFn func(emit.Stage) bool) {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "out")
		if err := l.WriteDir(dir); err != nil {
			t.Fatal(err)
		}
		if _, err := Check(dir); err != nil {
			t.Fatal(err)
		}
		for _, st := range l.Manifest.Stages {
			wantData := wantFn(st)
			if (st.DataFile != "") != wantData {
				t.Errorf("%s: stage %d data file %q", name, st.Index, st.DataFile)
			}
			mp := stageModelOf(t, dir, st)
			for _, w := range mp.Graph.Initializer {
				isExt := w.GetDataLocation() == onnxpb.TensorProto_EXTERNAL
				if isExt && w.ExternalData[0].GetValue() != st.DataFile {
					t.Errorf("%s: %s at %q", name, w.GetName(), w.ExternalData[0].GetValue())
				}
				if wantData && !isExt && len(w.RawData) >= emit.ExternalMinBytes {
					t.Errorf("%s: %d-byte weight %s kept inline", name, len(w.RawData), w.GetName())
				}
			}
		}
		rep, err := Run(context.Background(), dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Pass {
			t.Errorf("%s: %v", name, MismatchOf(rep).Error())
		}
	}
	yes := func(emit.Stage) bool { return true }
	no := func(emit.Stage) bool { return false }
	check("ext source", prepared(t, "resnet50_small_ext.onnx", 3, emit.Options{}), yes)
	check("ext source, never", prepared(t, "resnet50_small_ext.onnx", 3, emit.Options{ExternalData: emit.ExternalNever}), no)
	check("inline source", prepared(t, "vgg16_small.onnx", 3, emit.Options{}), no)
	// Only the stages over the limit move their weights out.
	over := func(st emit.Stage) bool { return st.ParamsBytes > 64<<10 }
	l := prepared(t, "vgg16_small.onnx", 3, emit.Options{MaxInlineBytes: 64 << 10})
	n := 0
	for _, st := range l.Manifest.Stages {
		if over(st) {
			n++
		}
	}
	if n == 0 || n == len(l.Manifest.Stages) {
		t.Fatalf("want some stages over the limit and some under: %d of %d", n, len(l.Manifest.Stages))
	}
	check("inline source, limit", l, over)
	check("inline source, always", prepared(t, "vgg16_small.onnx", 3, emit.Options{ExternalData: emit.ExternalAlways}), yes)
	l = prepared(t, "vgg16_small.onnx", 2, emit.Options{MaxInlineBytes: 64 << 10, ExternalData: emit.ExternalNever})
	if err := l.WriteDir(filepath.Join(t.TempDir(), "out")); err == nil || !strings.Contains(err.Error(), "external data is disabled") {
		t.Errorf("over the limit with external data disabled: %v", err)
	}
}
