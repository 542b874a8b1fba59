package pipebench

import (
	"os"
	"path/filepath"

	ortgo "github.com/yalue/onnxruntime_go"
	"golang.org/x/sys/unix"

	"github.com/onnxpart/onnxpart/internal/ort"
)

// providerLibs are the shared libraries ONNX Runtime loads, from its own directory, for an
// execution provider.
var providerLibs = map[string][]string{
	"CUDAExecutionProvider":     {"libonnxruntime_providers_shared.so", "libonnxruntime_providers_cuda.so"},
	"TensorrtExecutionProvider": {"libonnxruntime_providers_shared.so", "libonnxruntime_providers_tensorrt.so"},
}

// ortProvider asks the loaded ONNX Runtime library whether it has the CUDA or TensorRT
// execution provider: the provider's libraries must lie beside it (where the runtime loads
// them from; a CPU build such as the npm package's has none), and then the runtime must
// accept the provider's options (it loads them, with the CUDA libraries they need).
func ortProvider(name string) (bool, error) {
	if err := ort.Init(); err != nil {
		return false, err
	}
	lib, err := ort.LibraryPath()
	if err != nil {
		return false, err
	}
	for _, f := range providerLibs[name] {
		if _, err := os.Stat(filepath.Join(filepath.Dir(lib), f)); err != nil {
			return false, nil
		}
	}
	so, err := ortgo.NewSessionOptions()
	if err != nil {
		return false, err
	}
	defer so.Destroy()
	switch name {
	case "CUDAExecutionProvider":
		o, err := ortgo.NewCUDAProviderOptions()
		if err != nil {
			return false, nil
		}
		defer o.Destroy()
		return so.AppendExecutionProviderCUDA(o) == nil, nil
	case "TensorrtExecutionProvider":
		o, err := ortgo.NewTensorRTProviderOptions()
		if err != nil {
			return false, nil
		}
		defer o.Destroy()
		return so.AppendExecutionProviderTensorRT(o) == nil, nil
	}
	return name == "CPUExecutionProvider", nil
}

// ortVersion is the loaded library's version string.
func ortVersion() string {
	if ort.Init() != nil {
		return ""
	}
	return ortgo.GetVersion()
}

// threadCPU is the calling thread's CPU time, seconds.
func threadCPU() float64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return float64(ts.Sec) + float64(ts.Nsec)*1e-9
}
