package ingest

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"
)

// FuzzIngest feeds arbitrary bytes to the loader: it must return a model or an input or
// usage *diag.Error, never panic or hang. The corpus models and a few tiny models seed it.
func FuzzIngest(f *testing.F) {
	for _, p := range corpus(f) {
		if b, err := os.ReadFile(p); err == nil && len(b) < 128<<10 { // large seeds make every mutation (and minimisation) slow
			f.Add(b)
		}
	}
	for _, m := range seedModels() {
		b, _ := proto.Marshal(m)
		f.Add(b)
	}
	dir := f.TempDir()
	os.WriteFile(filepath.Join(dir, "w.bin"), make([]byte, 64), 0o644)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := loadBytes(filepath.Join(dir, "fuzz.onnx"), data, Options{})
		if err != nil {
			if !isInput(err) && !isUsage(err) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		// A loaded model is internally consistent.
		g := m.Graph
		if !g.IsTopological(g.TopoOrder()) {
			t.Fatal("topological order is not")
		}
		for i := range g.Tensors {
			if g.Tensors[i].Bytes < -1 {
				t.Fatalf("tensor %q has %d bytes", g.Tensors[i].Name, g.Tensors[i].Bytes)
			}
		}
		m.Summarize(true)
	})
}
