package measure

import (
	"testing"

	"github.com/onnxpart/onnxpart/internal/ort"
)

// The probe finds ONNX Runtime's NCHWc block and an alignment that divides it.
func TestProbeNCHWc(t *testing.T) {
	if _, err := ort.LibraryPath(); err != nil {
		t.Skip(err)
	}
	if err := ort.Init(); err != nil {
		t.Skip(err)
	}
	block, align, err := probeNCHWc(1)
	if err != nil {
		t.Fatal(err)
	}
	if block == 0 {
		t.Skip("ONNX Runtime uses no blocked layout on this CPU")
	}
	if block < 4 || align < 1 || block%align != 0 {
		t.Errorf("block %d, alignment %d: want a block of at least 4 channels and an alignment dividing it", block, align)
	}
	t.Logf("NCHWc block %d channels, alignment %d", block, align)
}
