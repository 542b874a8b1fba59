package triton

import (
	"testing"

	"github.com/onnxpart/onnxpart/internal/ort"
)

func needORT(t testing.TB) {
	t.Helper()
	if _, err := ort.LibraryPath(); err != nil {
		t.Skip(err)
	}
}
