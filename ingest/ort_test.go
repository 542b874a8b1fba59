package ingest

import (
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/onnxpb"

	"github.com/x448/float16"
)

// randomFeed makes a deterministic input tensor: integers in {0, 1} (valid token ids and
// mask values), floats in [-1, 1).
func randomFeed(rng *rand.Rand, t *graph.Tensor) *ort.Tensor {
	dims := t.Shape.Dims()
	n := int64(1)
	for _, d := range dims {
		n *= d
	}
	out := &ort.Tensor{DType: t.DType, Shape: dims}
	switch t.DType {
	case graph.Float:
		v := make([]float32, n)
		for i := range v {
			v[i] = rng.Float32()*2 - 1
		}
		out.Data = f32bytes(v)
	case graph.Float16:
		out.Data = make([]byte, 2*n)
		for i := int64(0); i < n; i++ {
			h := float16.Fromfloat32(rng.Float32()*2 - 1).Bits()
			out.Data[2*i], out.Data[2*i+1] = byte(h), byte(h>>8)
		}
	case graph.Int64:
		out.Data = make([]byte, 8*n)
		for i := int64(0); i < n; i++ {
			out.Data[8*i] = byte(rng.Intn(2))
		}
	default:
		b, _ := graph.ByteSize(t.DType, t.Shape)
		out.Data = make([]byte, b)
	}
	return out
}

func f32bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		u := mathFloat32bits(f)
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	return b
}

// TestShapesMatchONNXRuntime makes every intermediate tensor a graph output, runs the model in
// ONNX Runtime, and compares each tensor's actual dtype and shape with onnxpart's inference.
func TestShapesMatchONNXRuntime(t *testing.T) {
	if _, err := ort.LibraryPath(); err != nil {
		t.Skip(err)
	}
	for _, p := range corpus(t) {
		t.Run(filepath.Base(p), func(t *testing.T) {
			m, err := Load(p, Options{Dims: dimsFor(p)})
			if err != nil {
				t.Fatal(err)
			}
			g := m.Graph
			mp := proto.Clone(m.proto).(*onnxpb.ModelProto)
			have := map[string]bool{}
			for _, o := range mp.Graph.Output {
				have[o.GetName()] = true
			}
			var names []string
			hints := map[string]ort.OutputHint{}
			for _, tn := range g.Tensors {
				if tn.Kind != graph.Activation || tn.Producer < 0 {
					continue
				}
				names = append(names, tn.Name)
				hints[tn.Name] = ort.OutputHint{DType: tn.DType, Shape: tn.Shape.Dims()}
				if have[tn.Name] {
					continue
				}
				mp.Graph.Output = append(mp.Graph.Output, &onnxpb.ValueInfoProto{
					Name: proto.String(tn.Name),
					Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{
						ElemType: proto.Int32(int32(tn.DType))}}},
				})
			}
			dir := t.TempDir()
			if m.ExternalData {
				for _, init := range mp.Graph.Initializer {
					if ref, _ := m.ExternalRef(init.GetName()); ref != nil {
						dst := filepath.Join(dir, ref.Rel)
						if _, err := os.Lstat(dst); err != nil {
							// ORT refuses data files that resolve outside the model's
							// directory (symlinks included), so copy it.
							data, err := os.ReadFile(ref.Path)
							if err != nil {
								t.Fatal(err)
							}
							if err := os.WriteFile(dst, data, 0o644); err != nil {
								t.Fatal(err)
							}
						}
					}
				}
			}
			path := filepath.Join(dir, "all_outputs.onnx")
			b, err := proto.Marshal(mp)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			var inNames []string
			feeds := map[string]*ort.Tensor{}
			rng := rand.New(rand.NewSource(1))
			for _, id := range g.Inputs {
				tn := &g.Tensors[id]
				inNames = append(inNames, tn.Name)
				feeds[tn.Name] = randomFeed(rng, tn)
			}
			s, err := ort.NewSession(path, inNames, names, ort.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// Scalars and fp16 outputs are preallocated from the hints; others are allocated by
			// ORT, so their shapes are ORT's own.
			res, err := s.Run(feeds, onlyPreallocated(hints))
			if err != nil {
				t.Fatal(err)
			}
			bad := 0
			for _, name := range names {
				got := res[name]
				id, _ := g.TensorByName(name)
				want := &g.Tensors[id]
				if got.DType != want.DType || !graph.ShapeOf(got.Shape...).Equal(want.Shape) {
					bad++
					if bad <= 10 {
						t.Errorf("%s: ORT gives %s %v, inference gave %s %v", name, got.DType, got.Shape, want.DType, want.Shape)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d tensors differ", bad, len(names))
			}
		})
	}
}

// onlyPreallocated keeps the hints the ORT wrapper must preallocate (scalars, non-native
// element types), so every other output's shape is reported by ORT itself.
func onlyPreallocated(h map[string]ort.OutputHint) map[string]ort.OutputHint {
	out := map[string]ort.OutputHint{}
	for k, v := range h {
		if len(v.Shape) == 0 || v.DType == graph.Float16 || v.DType == graph.BFloat16 {
			out[k] = v
		}
	}
	return out
}
