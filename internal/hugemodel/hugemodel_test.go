package hugemodel

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ort"
)

// TestSmallModelRuns: a small instance runs in ONNX Runtime and gives Expected bit for bit,
// and the data file is sparse (the off-diagonal zeros are holes).
func TestSmallModelRuns(t *testing.T) {
	dir := t.TempDir()
	s := Spec{Layers: 3, Dim: 4096, Name: "small"}
	p, err := Write(dir, s)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p + ".data")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() < s.WeightBytes() {
		t.Errorf("data file is %d bytes, weights %d", fi.Size(), s.WeightBytes())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Blocks*512 > fi.Size()/3 {
		t.Errorf("data file holds %d bytes on disk of %d: not sparse", st.Blocks*512, fi.Size())
	}
	if _, err := ort.LibraryPath(); err != nil {
		t.Skip(err)
	}
	sess, err := ort.NewSession(p, []string{"x"}, []string{"y"}, ort.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	x := make([]float32, s.Dim)
	data := make([]byte, 4*s.Dim)
	for j := range x {
		x[j] = float32(j%13)/6 - 1
		binary.LittleEndian.PutUint32(data[4*j:], math.Float32bits(x[j]))
	}
	out, err := sess.Run(map[string]*ort.Tensor{"x": {DType: graph.Float, Shape: []int64{1, int64(s.Dim)}, Data: data}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Expected(s, x)
	y := out["y"]
	for j := range want {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(y.Data[4*j:])); got != want[j] {
			t.Fatalf("y[%d] = %v, want %v", j, got, want[j])
		}
	}
}

func TestBadSpec(t *testing.T) {
	if _, err := Write(t.TempDir(), Spec{}); err == nil {
		t.Error("empty spec accepted")
	}
	if _, err := Write(filepath.Join(t.TempDir(), "nothere"), Spec{Layers: 1, Dim: 1}); err == nil {
		t.Error("missing directory accepted")
	}
}
