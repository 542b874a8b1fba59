package emit

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

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/onnxpb"
	"github.com/onnxpart/onnxpart/internal/ort"
)

// listTree lists every path under root (relative, sorted), links included, not followed.
func listTree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Errorf("walking %s: %v", p, err)
			return nil
		}
		if p != root {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

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
			before := listTree(t, root)
			out := filepath.Join(root, "out")
			if err := os.Symlink(victim, out); err != nil {
				t.Fatal(err)
			}
			before = append(before, "out")
			sort.Strings(before)

			err := prepared(t, "squeezenet1_1_small.onnx", 2, Options{}).WriteDir(out)
			var ee *ExistsError
			if !errors.As(err, &ee) || !ee.Link || !strings.Contains(err.Error(), "symbolic link") {
				t.Fatalf("without --force: %v", err)
			}
			if got := listTree(t, root); strings.Join(got, " ") != strings.Join(before, " ") {
				t.Errorf("without --force, the tree changed: %v, was %v", got, before)
			}
			if target, err := os.Readlink(out); err != nil || target != victim {
				t.Errorf("the link changed: %q, %v", target, err)
			}

			if err := prepared(t, "squeezenet1_1_small.onnx", 2, Options{Force: true}).WriteDir(out); err != nil {
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
			if got := listTree(t, root); strings.Join(got, " ") != strings.Join(want, " ") {
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

// TestWriteNeverIntoModelDir: the output directory may not be the model's directory or
// hold it, however it is spelt (relative, with dot segments, through a symbolic link), not
// even with --force; the model's files are untouched.
func TestWriteNeverIntoModelDir(t *testing.T) {
	src := corpusModel(t, "resnet50_small_ext.onnx").path
	root := t.TempDir()
	dir := filepath.Join(root, "models", "m")
	os.MkdirAll(dir, 0o755)
	for _, f := range []string{src, src + ".data"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644)
	}
	os.Symlink(dir, filepath.Join(root, "link_to_model_dir"))
	os.Symlink(filepath.Join(root, "models"), filepath.Join(root, "link_to_parent"))
	m := loadPath(t, filepath.Join(dir, filepath.Base(src)))
	stage, err := EqualFLOPs(m.Graph, 2)
	if err != nil {
		t.Fatal(err)
	}
	before := listTree(t, root)
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{
		dir, dir + "/", ".", "./", "..", "../..", filepath.Join(dir, "sub", ".."), filepath.Dir(dir), root,
		filepath.Join(root, "link_to_model_dir"), filepath.Join(root, "link_to_parent"),
		filepath.Join(root, "link_to_parent", "m"), m.Path,
	} {
		_, err := Write(m, &Assignment{Stage: stage}, out, Options{Force: true})
		if err == nil || !strings.Contains(err.Error(), "never overwrites") {
			t.Errorf("-o %s --force: %v", out, err)
		}
	}
	if got := listTree(t, root); strings.Join(got, " ") != strings.Join(before, " ") {
		t.Errorf("the tree changed: %v, was %v", got, before)
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
	g.Input = []*onnxpb.ValueInfoProto{vinfo(prev, graph.Float, 1, 256)}
	for i := 1; i <= n; i++ {
		w := "w:" + name(i)
		vals := make([]float32, 256)
		for j := range vals {
			vals[j] = float32(i*j%7) - 3
		}
		g.Initializer = append(g.Initializer, floatTensor(w, []int64{1, 256}, vals...)) // 1 KiB: external with ExternalAlways
		out := name(i + n)
		g.Node = append(g.Node, node("Add", hostileNames[i-1], []string{prev, w}, []string{out}))
		prev = out
	}
	g.Output = []*onnxpb.ValueInfoProto{vinfo(prev, graph.Float, 1, 256)}
	mp := &onnxpb.ModelProto{IrVersion: proto.Int64(8), OpsetImport: opsets(), Graph: g,
		ProducerName: proto.String(hostileNames[1]), DocString: proto.String(hostileNames[6])}
	m := loadPath(t, writeModel(t, mp))

	for _, mode := range []ExternalDataMode{ExternalAuto, ExternalAlways} {
		root := t.TempDir()
		out := filepath.Join(root, "out")
		stage, err := EqualFLOPs(m.Graph, 3)
		if err != nil {
			t.Fatal(err)
		}
		man, err := Write(m, &Assignment{Stage: stage}, out, Options{ExternalData: mode})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"out", "out/manifest.json"}
		for _, st := range man.Stages {
			want = append(want, "out/"+stageFile(st.Index))
			if mode == ExternalAlways {
				want = append(want, "out/"+dataFile(st.Index))
			}
		}
		sort.Strings(want)
		if got := listTree(t, root); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("mode %d: files %q, want %q", mode, got, want)
		}
		if esc, _ := filepath.Glob("/tmp/onnxpart-escape*"); len(esc) > 0 {
			t.Errorf("written outside the output directory: %v", esc)
		}
		read, err := Check(out)
		if err != nil {
			t.Fatal(err)
		}
		js, _ := os.ReadFile(filepath.Join(out, ManifestFile))
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

// verifyIfORT runs Verify on dir when ONNX Runtime is available.
func verifyIfORT(t *testing.T, dir string) {
	t.Helper()
	if !ortAvailable() {
		return
	}
	rep, err := Verify(context.Background(), dir, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Pass {
		t.Error((&MismatchError{Report: rep}).Error())
	}
}

// TestWriteCopiesWeightsThroughCheckedResolution: emit copies external weights through
// ingest's checked resolution at write time, not through a path remembered at load time:
// a data file replaced by a link leading outside, or truncated, after Load makes Write fail
// with nothing written, and the outside file is never copied.
func TestWriteCopiesWeightsThroughCheckedResolution(t *testing.T) {
	src := corpusModel(t, "resnet50_small_ext.onnx").path
	data, err := os.ReadFile(src + ".data")
	if err != nil {
		t.Fatal(err)
	}
	for _, tamper := range []string{"link outside", "truncated"} {
		t.Run(tamper, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "m")
			os.Mkdir(dir, 0o755)
			b, _ := os.ReadFile(src)
			os.WriteFile(filepath.Join(dir, filepath.Base(src)), b, 0o644)
			dataPath := filepath.Join(dir, filepath.Base(src)+".data")
			os.WriteFile(dataPath, data, 0o644)
			m := loadPath(t, filepath.Join(dir, filepath.Base(src)))
			stage, _ := EqualFLOPs(m.Graph, 3)
			l, err := Prepare(m, &Assignment{Stage: stage}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			switch tamper {
			case "link outside":
				secret := filepath.Join(root, "secret.data")
				os.WriteFile(secret, data, 0o644) // same size: only the location check can tell
				os.Remove(dataPath)
				if err := os.Symlink(secret, dataPath); err != nil {
					t.Fatal(err)
				}
			case "truncated":
				os.Truncate(dataPath, int64(len(data)/2))
			}
			before := listTree(t, root)
			out := filepath.Join(root, "out")
			err = l.WriteDir(out)
			if err == nil {
				t.Fatal("written")
			}
			want := map[string]string{"link outside": "outside the model's directory", "truncated": "too short"}[tamper]
			if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %q, want one line mentioning %q", err, want)
			}
			if got := listTree(t, root); strings.Join(got, " ") != strings.Join(before, " ") {
				t.Errorf("left behind: %v", got)
			}
		})
	}
}

// TestVerifyRefusesHugeTensors: a model declaring a 10^12-element input (4 TB of floats),
// or a small input that a node expands to 10^12 float16 elements, is refused by Verify from
// its declared shapes, quickly and without allocating; the limit is configurable, and
// RandomFeeds keeps the default one.
func TestVerifyRefusesHugeTensors(t *testing.T) {
	// Each model is x → r1 → … → r2 → y, cut right before its last node.
	write := func(g *onnxpb.GraphProto) (*ingest.Model, string) {
		mp := &onnxpb.ModelProto{IrVersion: proto.Int64(8), OpsetImport: opsets(), Graph: g}
		m := loadPath(t, writeModel(t, mp))
		out := filepath.Join(t.TempDir(), "out")
		stage := make([]int, len(m.Graph.Nodes))
		stage[len(stage)-1] = 1
		if _, err := Write(m, &Assignment{Stage: stage}, out, Options{}); err != nil {
			t.Fatal(err)
		}
		return m, out
	}
	bigIn, bigInDir := write(&onnxpb.GraphProto{Name: proto.String("big_input"),
		Input:  []*onnxpb.ValueInfoProto{vinfo("x", graph.Float, 1000000, 1000000)},
		Output: []*onnxpb.ValueInfoProto{vinfo("y", graph.Float, 1000000, 1000000)},
		Node: []*onnxpb.NodeProto{node("Relu", "r1", []string{"x"}, []string{"a"}),
			node("Relu", "r2", []string{"a"}, []string{"y"})}})
	shape := &onnxpb.TensorProto{Name: proto.String("shape"), Dims: []int64{2}, DataType: proto.Int32(int32(graph.Int64)),
		Int64Data: []int64{1000000, 1000000}}
	_, bigOutDir := write(&onnxpb.GraphProto{Name: proto.String("big_output"),
		Input:       []*onnxpb.ValueInfoProto{vinfo("x", graph.Float16, 1, 1)},
		Output:      []*onnxpb.ValueInfoProto{vinfo("y", graph.Float16, 1000000, 1000000)},
		Initializer: []*onnxpb.TensorProto{shape},
		Node: []*onnxpb.NodeProto{node("Relu", "r1", []string{"x"}, []string{"a"}),
			node("Expand", "e", []string{"a", "shape"}, []string{"b"}),
			node("Relu", "r2", []string{"b"}, []string{"y"})}})

	for _, tc := range []struct {
		dir, want string
	}{
		{bigInDir, `model input "x" (float32 [1000000,1000000]) would take 4000000000000 bytes`},
		{bigOutDir, `stage boundary tensor "b" (float16 [1000000,1000000]) would take 2000000000000 bytes`},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Verify(context.Background(), tc.dir, VerifyOptions{})
		runtime.ReadMemStats(&after)
		var se *SizeLimitError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want a one-line SizeLimitError mentioning %q", tc.dir, err, tc.want)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
			t.Errorf("%s: refusing allocated %d bytes", tc.dir, grew)
		}
	}
	if _, err := RandomFeeds(bigIn.Graph, 1); !errors.As(err, new(*SizeLimitError)) {
		t.Errorf("RandomFeeds: %v", err)
	}

	// The limit is configurable: a corpus model is refused one byte under its largest input,
	// boundary or output tensor, and passes at exactly that size.
	l := prepared(t, "squeezenet1_1_small.onnx", 2, Options{})
	out := filepath.Join(t.TempDir(), "sq")
	if err := l.WriteDir(out); err != nil {
		t.Fatal(err)
	}
	var largest int64
	for _, r := range append(append([]TensorRef{}, l.Manifest.Model.Inputs...), l.Manifest.Model.Outputs...) {
		largest = max(largest, r.Bytes)
	}
	for _, tr := range l.Manifest.Transfers {
		largest = max(largest, tr.Bytes)
	}
	_, err := Verify(context.Background(), out, VerifyOptions{MaxTensorBytes: largest - 1})
	if !errors.As(err, new(*SizeLimitError)) || !strings.Contains(err.Error(), fmt.Sprintf("%d bytes in memory, over the %d-byte limit", largest, largest-1)) {
		t.Errorf("limit %d: %v", largest-1, err)
	}
	if ortAvailable() {
		if rep, err := Verify(context.Background(), out, VerifyOptions{MaxTensorBytes: largest}); err != nil || !rep.Pass {
			t.Errorf("limit %d: %v", largest, err)
		}
	}
}

func ortAvailable() bool {
	_, err := ort.LibraryPath()
	return err == nil
}

// TestCheckDataFileStaysInside: Check (and so Verify) reads a stage's data file only when
// the manifest names a plain file in the directory, and only a regular file: a manifest
// naming "../secret" or a FIFO is a problem, not a read (a FIFO would block).
func TestCheckDataFileStaysInside(t *testing.T) {
	l := prepared(t, "squeezenet1_1_small.onnx", 2, Options{ExternalData: ExternalAlways})
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
		man, err := ReadManifest(out)
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
		os.WriteFile(filepath.Join(out, ManifestFile), js, 0o644)
		done := make(chan error, 1)
		go func() { _, err := Check(out); done <- err }()
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("data file %q: Check did not return within 30s", tc.file)
		}
		var ce *CheckError
		if !errors.As(err, &ce) || !strings.Contains(strings.Join(ce.Problems, "\n"), tc.want) {
			t.Errorf("data file %q: %v, want a problem mentioning %q", tc.file, err, tc.want)
		}
	}
}
