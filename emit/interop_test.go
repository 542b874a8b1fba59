package emit

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/internal/testmodel"
)

// pythonWith returns a Python interpreter that imports the given modules (Debian's
// python3-onnx and python3-numpy), or skips the test.
func pythonWith(t *testing.T, modules string) string {
	t.Helper()
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if err := exec.Command(py, "-c", "import "+modules).Run(); err == nil {
			return py
		}
	}
	t.Skipf("no Python with %s (apt-get install python3-onnx python3-numpy)", modules)
	return ""
}

// TestONNXCheckerAcceptsStages: the reference checker (onnx.checker, full_check: types and
// shape inference) accepts every stage of float32, float16, external-data, symbolic-batch
// and transformer models.
func TestONNXCheckerAcceptsStages(t *testing.T) {
	py := pythonWith(t, "onnx")
	var dirs []string
	for _, name := range []string{"bert_base_like_small.onnx", "resnet50_small_fp16.onnx", "resnet50_small_ext.onnx",
		"mobilenet_v2_small_dynbatch.onnx", "randwire_ws_small_small.onnx"} {
		dir, _ := writeSplit(t, testmodel.Corpus(t, name), 5)
		dirs = append(dirs, dir)
	}
	dir, _ := writeSplit(t, testmodel.Config{Name: "controlflow", Path: testmodel.ControlFlowModel(t)}, 3)
	dirs = append(dirs, dir)
	script := `
import glob, os, sys, onnx
n = 0
for d in sys.argv[1:]:
    for f in sorted(glob.glob(os.path.join(d, "stage*.onnx"))):
        onnx.checker.check_model(f, full_check=True)
        n += 1
print(n)
`
	out, err := exec.Command(py, append([]string{"-c", script}, dirs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("onnx.checker: %v\n%s", err, out)
	}
	if n := strings.TrimSpace(string(out)); n == "0" {
		t.Fatalf("no stage checked")
	}
	t.Logf("onnx.checker accepted %s stage files in %s", strings.TrimSpace(string(out)), filepath.Base(dirs[0]))
}
