package ingest

import (
	"math"
	"os"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/genaigen"
	"github.com/onnxpart/onnxpart/internal/llamagen"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// ocFromFile is an ocCase build function that takes the model at path as it is (graph,
// initializers, opsets) and feeds its inputs: token ids below vocab, attention masks of
// ones, positions counting from past, random floats elsewhere.
func ocFromFile(t *testing.T, path string, vocab int, sizes map[string]int64) func(m *ocModel) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mp := &onnxpb.ModelProto{}
	if err := proto.Unmarshal(data, mp); err != nil {
		t.Fatal(err)
	}
	return func(m *ocModel) {
		for _, o := range mp.OpsetImport {
			if d := o.GetDomain(); d == "" || d == "ai.onnx" {
				m.opset = o.GetVersion()
			} else {
				m.opsets[d] = o.GetVersion()
			}
		}
		m.g = proto.Clone(mp.Graph).(*onnxpb.GraphProto)
		m.g.Output = nil // runOCCase makes every node output a graph output
		m.g.ValueInfo = nil
		for _, vi := range m.g.Input {
			tt := vi.GetType().GetTensorType()
			var dims []any
			n := int64(1)
			for _, d := range tt.GetShape().GetDim() {
				if p := d.GetDimParam(); p != "" {
					dims = append(dims, p)
					n *= sizes[p]
				} else {
					dims = append(dims, d.GetDimValue())
					n *= d.GetDimValue()
				}
			}
			dt := graph.DType(tt.GetElemType())
			var vals []float64
			switch vi.GetName() {
			case "input_ids":
				vals = make([]float64, n)
				for i := range vals {
					vals[i] = float64((i*37 + 11) % vocab)
				}
			case "attention_mask", "input_mask":
				vals = make([]float64, n)
				for i := range vals {
					vals[i] = 1
				}
			case "position_ids":
				vals = make([]float64, n)
				for i := range vals {
					vals[i] = float64(sizes[genaigen.Past] + int64(i)%sizes[genaigen.Seq])
				}
			case "segment_ids":
				vals = make([]float64, n)
			}
			m.feeds[vi.GetName()] = &ocFeed{dt: dt, dims: dims, values: vals}
		}
	}
}

// TestGenAIShapesMatchORT: on decoders in the GenAI model builder's format (int4 and float32,
// fused and separate rotary, quantised embedding), the QDQ int8 CNN and the encoder in ORT
// optimizer form, all without value_info, ingest infers every tensor's shape and these equal
// ONNX Runtime's, at a prefill and at a decode step.
func TestGenAIShapesMatchORT(t *testing.T) {
	if _, err := ort.LibraryPath(); err != nil {
		t.Skip(err)
	}
	sep := genaigen.Tiny
	sep.Name, sep.Rotary, sep.QuantEmbed = "genai-tiny-sep", genaigen.RotarySeparate, true
	fp := genaigen.Tiny
	fp.Name, fp.Int4 = "genai-tiny-fp32", false
	acc := genaigen.Tiny
	acc.Name, acc.AccuracyLevel = "genai-tiny-acc4", 4
	for _, c := range []genaigen.Config{genaigen.Tiny, sep, fp, acc} {
		c.ValueInfo = false
		path, err := genaigen.Write(t.TempDir(), c)
		if err != nil {
			t.Fatal(err)
		}
		for _, ph := range []struct {
			name      string
			seq, past int64
		}{{"prefill", 7, 0}, {"decode", 1, 9}} {
			sizes := map[string]int64{genaigen.Batch: 1, genaigen.Seq: ph.seq, genaigen.Past: ph.past, genaigen.Total: ph.seq + ph.past}
			t.Run(c.Name+"/"+ph.name, func(t *testing.T) {
				runOCCase(t, ocCase{name: c.Name, build: ocFromFile(t, path, c.Vocab, sizes), bind: sizes})
			})
		}
	}
	cnn, err := genaigen.WriteCNN(t.TempDir(), genaigen.TinyCNN)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("qdq-cnn", func(t *testing.T) {
		sizes := map[string]int64{"batch": 2}
		runOCCase(t, ocCase{name: "cnn", build: ocFromFile(t, cnn, 1, sizes), bind: sizes})
	})
	enc, err := genaigen.WriteEncoder(t.TempDir(), genaigen.TinyEncoder)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("encoder", func(t *testing.T) {
		sizes := map[string]int64{"batch": 2, "sequence": 5}
		runOCCase(t, ocCase{name: "enc", build: ocFromFile(t, enc, genaigen.TinyEncoder.Vocab, sizes), bind: sizes})
	})
}

// TestGenAIDecoderFacts is the check on a builder-format decoder with value_info
// stripped: no unknown shapes and no unsupported ops; FLOPs within 15% of the same decoder
// written with plain ops (llamagen.Small, the optimum-style export), at a prefill and a decode
// step; logical parameters within 2% of the float32 twin, with the int4 packing and the
// quantisation scales counted right.
func TestGenAIDecoderFacts(t *testing.T) {
	q := genaigen.Small
	q.ValueInfo, q.QuantEmbed = false, true
	f := q
	f.Name, f.Int4, f.QuantEmbed = "genai-small-fp32", false, false
	load := func(path string, dims map[string]int64) *Model {
		m, err := Load(path, Options{Dims: dims})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	qp, err := genaigen.Write(t.TempDir(), q)
	if err != nil {
		t.Fatal(err)
	}
	fpath, err := genaigen.Write(t.TempDir(), f)
	if err != nil {
		t.Fatal(err)
	}
	lc := llamagen.Small
	lp, err := llamagen.Write(t.TempDir(), lc)
	if err != nil {
		t.Fatal(err)
	}
	for _, ph := range []struct{ seq, past int64 }{{512, 0}, {1, 511}} {
		dims := map[string]int64{genaigen.Batch: 1, genaigen.Seq: ph.seq, genaigen.Past: ph.past, genaigen.Total: ph.seq + ph.past}
		qm, fm := load(qp, dims), load(fpath, dims)
		lm := load(lp, map[string]int64{"batch": 1, "seq": ph.seq, "past": ph.past, "total": ph.seq + ph.past})
		qs, fs, ls := qm.Summarize(false), fm.Summarize(false), lm.Summarize(false)
		if len(qs.UnsupportedOps) > 0 || qs.UnknownShapeTensors > 0 {
			t.Errorf("seq %d past %d: unsupported %v, %d unknown shapes %v", ph.seq, ph.past, qs.UnsupportedOps, qs.UnknownShapeTensors, qs.UnknownShapeNames)
		}
		for _, s := range []*Summary{qs, fs} {
			if r := float64(s.FLOPs) / float64(ls.FLOPs); math.Abs(r-1) > 0.15 {
				t.Errorf("seq %d past %d: %s FLOPs %d, plain-op twin %d (ratio %.3f)", ph.seq, ph.past, s.Path, s.FLOPs, ls.FLOPs, r)
			} else {
				t.Logf("seq %d past %d: FLOPs %d vs plain-op %d (ratio %.3f)", ph.seq, ph.past, s.FLOPs, ls.FLOPs, r)
			}
		}
		if r := float64(qs.Params) / float64(fs.Params); math.Abs(r-1) > 0.02 {
			t.Errorf("int4 params %d, float32 twin %d (ratio %.4f)", qs.Params, fs.Params, r)
		}
		// The configuration counts the matrices, norms and embeddings; the model also stores
		// the rotary cos/sin caches (Context × HeadSize/2 each) and a few scalar constants.
		caches := int64(2 * q.Context * q.HeadSize() / 2)
		if qs.Params != fs.Params || qs.Params < q.Params()+caches || qs.Params > q.Params()+caches+16 {
			t.Errorf("params: int4 %d, float32 %d, the configuration's %d + caches %d", qs.Params, fs.Params, q.Params(), caches)
		}
		if qs.QuantParams == 0 || fs.QuantParams != 0 {
			t.Errorf("quantisation metadata: int4 %d, float32 %d", qs.QuantParams, fs.QuantParams)
		}
		if qs.ParamsBytes*3 > fs.ParamsBytes {
			t.Errorf("int4 weights %d B, float32 %d B: packing not reflected", qs.ParamsBytes, fs.ParamsBytes)
		}
	}
}
