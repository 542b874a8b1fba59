package ingest

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// tiny builds a minimal valid model: x:[1,4] float → Relu → y, plus whatever edit does.
func tiny(edit func(m *onnxpb.ModelProto)) *onnxpb.ModelProto {
	f := int32(1)
	vi := func(name string, dims ...int64) *onnxpb.ValueInfoProto {
		s := &onnxpb.TensorShapeProto{}
		for _, d := range dims {
			s.Dim = append(s.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
		}
		return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{
			Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{ElemType: &f, Shape: s}}}}
	}
	m := &onnxpb.ModelProto{
		IrVersion:   proto.Int64(8),
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(17)}},
		Graph: &onnxpb.GraphProto{
			Name:   proto.String("tiny"),
			Input:  []*onnxpb.ValueInfoProto{vi("x", 1, 4)},
			Output: []*onnxpb.ValueInfoProto{vi("y", 1, 4)},
			Node: []*onnxpb.NodeProto{
				{Name: proto.String("relu"), OpType: proto.String("Relu"), Input: []string{"x"}, Output: []string{"y"}},
			},
		},
	}
	if edit != nil {
		edit(m)
	}
	return m
}

func writeModel(t *testing.T, dir, name string, m *onnxpb.ModelProto) string {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func node(name, op string, ins, outs []string) *onnxpb.NodeProto {
	return &onnxpb.NodeProto{Name: proto.String(name), OpType: proto.String(op), Input: ins, Output: outs}
}

func externalInit(name, location string, offset, length int64, dims ...int64) *onnxpb.TensorProto {
	t := &onnxpb.TensorProto{Name: proto.String(name), DataType: proto.Int32(1), Dims: dims,
		DataLocation: onnxpb.TensorProto_EXTERNAL.Enum()}
	t.ExternalData = []*onnxpb.StringStringEntryProto{{Key: proto.String("location"), Value: proto.String(location)}}
	if offset >= 0 {
		t.ExternalData = append(t.ExternalData, &onnxpb.StringStringEntryProto{Key: proto.String("offset"), Value: proto.String(itoa(offset))})
	}
	if length >= 0 {
		t.ExternalData = append(t.ExternalData, &onnxpb.StringStringEntryProto{Key: proto.String("length"), Value: proto.String(itoa(length))})
	}
	return t
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// TestBadInput checks that every kind of bad input gives one clear error naming the culprit,
// of the right type (bad input vs bad usage), and never a panic.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile(filepath.Join(corpusDir, "squeezenet1_1_small.onnx"))
	if err != nil {
		t.Skip("corpus missing")
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	os.Mkdir(filepath.Join(dir, "adir.onnx"), 0o755)
	// External data: 16 bytes of weights for a [4] float tensor at offset 0, and a short file.
	write("w.bin", make([]byte, 16))
	write("short.bin", make([]byte, 8))
	addW := func(init *onnxpb.TensorProto) func(m *onnxpb.ModelProto) {
		return func(m *onnxpb.ModelProto) {
			m.Graph.Initializer = []*onnxpb.TensorProto{init}
			m.Graph.Node[0] = node("add", "Add", []string{"x", "w"}, []string{"y"})
		}
	}

	cases := []struct {
		name  string
		path  string
		opt   Options
		usage bool     // a usage *diag.Error rather than an input one
		want  []string // substrings of the message
	}{
		{name: "missing file", path: filepath.Join(dir, "nope.onnx"), want: []string{"nope.onnx", "no such file"}},
		{name: "directory", path: filepath.Join(dir, "adir.onnx"), want: []string{"adir.onnx", "is a directory"}},
		{name: "empty file", path: write("empty.onnx", nil), want: []string{"empty.onnx", "is empty"}},
		{name: "truncated protobuf", path: write("trunc.onnx", good[:len(good)/2]), want: []string{"trunc.onnx", "truncated or corrupt protobuf"}},
		{name: "text file", path: write("readme.onnx", []byte("# not a model\nhello\n")), want: []string{"readme.onnx", "not an ONNX model"}},
		{name: "binary garbage", path: write("png.onnx", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00")), want: []string{"png.onnx", "not an ONNX model"}},
		{name: "cycle", path: writeModel(t, dir, "cycle.onnx", tiny(func(m *onnxpb.ModelProto) {
			m.Graph.Node = []*onnxpb.NodeProto{
				node("a", "Add", []string{"x", "c"}, []string{"b"}),
				node("bnode", "Relu", []string{"b"}, []string{"c"}),
				node("out", "Relu", []string{"b"}, []string{"y"}),
			}
		})), want: []string{"cycle", "a -> bnode -> a"}},
		{name: "produced twice", path: writeModel(t, dir, "twice.onnx", tiny(func(m *onnxpb.ModelProto) {
			m.Graph.Node = append(m.Graph.Node, node("relu2", "Relu", []string{"x"}, []string{"y"}))
		})), want: []string{`"y"`, "produced twice", "relu", "relu2"}},
		{name: "dangling name", path: writeModel(t, dir, "dangling.onnx", tiny(func(m *onnxpb.ModelProto) {
			m.Graph.Node[0].Input = []string{"ghost"}
		})), want: []string{"relu", `"ghost"`, "no node produces"}},
		{name: "missing external file", path: writeModel(t, dir, "ext_missing.onnx", tiny(addW(externalInit("w", "nothere.bin", -1, -1, 4)))),
			want: []string{`"w"`, "nothere.bin", "missing"}},
		{name: "short external file", path: writeModel(t, dir, "ext_short.onnx", tiny(addW(externalInit("w", "short.bin", 0, 16, 4)))),
			want: []string{`"w"`, "short.bin", "too short"}},
		{name: "external length mismatch", path: writeModel(t, dir, "ext_len.onnx", tiny(addW(externalInit("w", "w.bin", 0, 8, 4)))),
			want: []string{`"w"`, "holds 8 bytes", "needs 16"}},
		{name: "external offset beyond end", path: writeModel(t, dir, "ext_off.onnx", tiny(addW(externalInit("w", "w.bin", 64, -1, 4)))),
			want: []string{`"w"`, "offset 64 is beyond the end"}},
		{name: "external path escape", path: writeModel(t, dir, "ext_escape.onnx", tiny(addW(externalInit("w", "../w.bin", -1, -1, 4)))),
			want: []string{`"w"`, "leaves the model's directory"}},
		{name: "external absolute path", path: writeModel(t, dir, "ext_abs.onnx", tiny(addW(externalInit("w", "/etc/passwd", -1, -1, 4)))),
			want: []string{`"w"`, "absolute paths are not allowed"}},
		{name: "initializer dims overflow", path: writeModel(t, dir, "overflow.onnx", tiny(addW(
			&onnxpb.TensorProto{Name: proto.String("w"), DataType: proto.Int32(1), Dims: []int64{1 << 40, 1 << 40}}))),
			want: []string{`"w"`, "overflows int64"}},
		{name: "inferred byte size overflow", path: writeModel(t, dir, "overflow2.onnx", tiny(func(m *onnxpb.ModelProto) {
			d := m.Graph.Input[0].Type.GetTensorType().Shape.Dim
			d[0].Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: 1 << 61}
			d[1].Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: 8}
		})), want: []string{`"x"`, "overflows int64"}},
		{name: "raw_data too short", path: writeModel(t, dir, "rawshort.onnx", tiny(addW(
			&onnxpb.TensorProto{Name: proto.String("w"), DataType: proto.Int32(1), Dims: []int64{4}, RawData: make([]byte, 12)}))),
			want: []string{`"w"`, "raw_data holds 12 bytes", "needs 16"}},
		{name: "no graph", path: writeModel(t, dir, "nograph.onnx", &onnxpb.ModelProto{IrVersion: proto.Int64(8)}),
			want: []string{"nograph.onnx", "without a graph"}},
		{name: "dim names nothing", path: write("sq.onnx", good), opt: Options{Dims: map[string]int64{"batch": 2}}, usage: true,
			want: []string{`Options.Dims["batch"] = 2`, "no symbolic dimensions"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Load(tc.path, tc.opt)
			if err == nil {
				t.Fatalf("loaded without error (%d nodes)", len(m.Graph.Nodes))
			}
			if tc.usage && !isUsage(err) {
				t.Errorf("want a usage *diag.Error, got %T: %v", err, err)
			}
			if !tc.usage && !isInput(err) {
				t.Errorf("want an input *diag.Error, got %T: %v", err, err)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("message spans lines: %q", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q does not mention %q", msg, w)
				}
			}
		})
	}
}

// TestInputNotModified checks that loading never writes to the model file.
func TestInputNotModified(t *testing.T) {
	for _, p := range corpus(t) {
		before, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(p)
		if _, err := Load(p, Options{Dims: dimsFor(p)}); err != nil {
			t.Fatal(err)
		}
		after, _ := os.ReadFile(p)
		st2, _ := os.Stat(p)
		if string(before) != string(after) || !st.ModTime().Equal(st2.ModTime()) {
			t.Fatalf("%s changed", p)
		}
	}
}

// seedModels are small models that exercise many code paths, for fuzzing.
func seedModels() []*onnxpb.ModelProto {
	return []*onnxpb.ModelProto{
		tiny(nil),
		tiny(func(m *onnxpb.ModelProto) {
			m.Graph.Initializer = []*onnxpb.TensorProto{externalInit("w", "w.bin", 0, 16, 4)}
			m.Graph.Node[0] = node("add", "Add", []string{"x", "w"}, []string{"y"})
		}),
		tiny(func(m *onnxpb.ModelProto) {
			m.Graph.Node = []*onnxpb.NodeProto{
				node("shape", "Shape", []string{"x"}, []string{"s"}),
				node("rs", "Reshape", []string{"x", "s"}, []string{"y"}),
			}
		}),
	}
}

// TestHostileModels checks the defences against models built to exhaust the machine: deeply
// nested subgraphs are refused by depth, and a tiny file declaring an enormous tensor fails
// on its size before anything is allocated for it.
func TestHostileModels(t *testing.T) {
	dir := t.TempDir()
	// If inside If inside If …, 150 levels deep.
	body := &onnxpb.GraphProto{Name: proto.String("leaf")}
	for i := 0; i < 150; i++ {
		body = &onnxpb.GraphProto{Name: proto.String("level"), Node: []*onnxpb.NodeProto{{
			OpType: proto.String("If"), Input: []string{"c"}, Output: []string{"o"},
			Attribute: []*onnxpb.AttributeProto{
				{Name: proto.String("then_branch"), Type: onnxpb.AttributeProto_GRAPH.Enum(), G: body},
				{Name: proto.String("else_branch"), Type: onnxpb.AttributeProto_GRAPH.Enum(), G: &onnxpb.GraphProto{Name: proto.String("leaf")}},
			}}}}
	}
	deep := writeModel(t, dir, "deep.onnx", tiny(func(m *onnxpb.ModelProto) { m.Graph.Node[0].Attribute = body.Node[0].Attribute }))
	if _, err := Load(deep, Options{}); err == nil || !strings.Contains(err.Error(), "nesting deeper than") {
		t.Errorf("deep nesting: %v", err)
	}
	// A ~100-byte file whose initializer claims 10^12 float elements.
	bomb := writeModel(t, dir, "bomb.onnx", tiny(func(m *onnxpb.ModelProto) {
		m.Graph.Initializer = []*onnxpb.TensorProto{{Name: proto.String("w"), DataType: proto.Int32(1), Dims: []int64{1_000_000, 1_000_000}}}
		m.Graph.Node[0] = node("add", "Add", []string{"x", "w"}, []string{"y"})
	}))
	if fi, _ := os.Stat(bomb); fi.Size() > 1024 {
		t.Fatalf("bomb file is %d bytes", fi.Size())
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Load(bomb, Options{})
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), `"w"`) || !strings.Contains(err.Error(), "1000000000000 elements") {
		t.Errorf("allocation bomb: %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("loading the bomb allocated %d bytes", grew)
	}
}

// isUsage reports whether err is a usage error (exit code 2).
func isUsage(err error) bool { return diag.KindOf(err) == diag.KindUsage }

// isInput reports whether err is a *diag.Error of kind input (exit code 1): a problem with the
// model, not an error from elsewhere.
func isInput(err error) bool {
	var de *diag.Error
	return errors.As(err, &de) && de.Kind == diag.KindInput
}
