package triton

import (
	"path/filepath"
	"testing"

	"github.com/onnxpart/onnxpart/internal/ort"
)

// corpusDir is the shared model corpus (real architectures, small weights).
var corpusDir = filepath.Join("..", "..", "..", "shared", "models")

func needORT(t testing.TB) {
	t.Helper()
	if _, err := ort.LibraryPath(); err != nil {
		t.Skip(err)
	}
}
