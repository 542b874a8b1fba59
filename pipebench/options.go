package pipebench

import (
	"time"

	"github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/profile"
)

// Format is the format string of a Report (schema bench.v1).
const Format = "onnxpart.bench/v1"

// Defaults of Options.
const (
	DefaultRequests = 200
	DefaultWarmup   = 10
	// DrainTimeout bounds the wait for the requests in flight after ctx is cancelled.
	DrainTimeout = 10 * time.Second
	// inputSets is the number of distinct input sets used in turn.
	inputSets = 4
)

// Device says how a device of the plan runs: its ONNX Runtime intra-op threads and the
// logical CPUs its worker is pinned to (none: not pinned).
type Device struct {
	Name    string
	Threads int
	CPUs    []int
}

// Options control Run.
type Options struct {
	// Requests is the number of measured requests (default DefaultRequests, unless Duration
	// is set); Duration measures for that long instead.
	Requests int
	Duration time.Duration
	// Warmup is the number of requests run one at a time before measuring (default
	// DefaultWarmup; negative: none).
	Warmup int
	// InFlight caps the requests in the pipeline at once (default: the number of stages, all
	// routes together).
	InFlight int
	// Seed of the random inputs; Inputs gives real data for model inputs (name → .npy file).
	Seed   int64
	Inputs map[string]string
	// Dims binds symbolic dimensions the stages kept (default: the size the manifest
	// records, else verify.DefaultDim). A dim the model ties to others (a decoder's total =
	// past + seq) and Dims leaves out follows them rather than its recorded size.
	Dims map[string]int64
	// Names are the caller's names of these options, by field, for errors to name them
	// ("Dims": "--dim", "Inputs": "--input", "ModelPath": "--model"); without them errors
	// name the Go fields (Options.Dims["batch"]).
	Names diag.Names
	// ModelPath is the original model, for inputs made as verify makes them (default: the
	// manifest's model path; when it is missing, inputs are made from the stage files).
	ModelPath string
	// Devices gives threads and CPUs by device name; devices not listed get the defaults
	// (DefaultDevices).
	Devices []Device
	// NoOptimize runs the stages with ONNX Runtime's graph optimizations off.
	NoOptimize bool
	// Spin is how long an idle worker polls its queue before it sleeps (0: it sleeps at
	// once). A sleeping worker is woken by the kernel when its next input arrives, which
	// costs microseconds on an idle machine and up to a scheduler slice on a busy one, on
	// every hand-off of the pipeline; spinning trades CPU time for that latency, as ONNX
	// Runtime's own thread pools do.
	Spin time.Duration
	// Phase, when set, is told what the bench is doing ("loading", "warm-up", "measuring").
	Phase func(string)
}

// DefaultDevices gives the devices of a plan threads and CPUs when nothing else does: one
// device gets every core, unpinned (as `--devices cpu` plans it); several share the
// process's CPUs equally, each pinned to its own consecutive share (as `--devices Nxcpu`
// and `cpu:NxT` plan them), or, with more devices than CPUs, one thread each, unpinned.
func DefaultDevices(names []string) map[string]Device {
	out := map[string]Device{}
	cpus := devices.AllowedCPUs()
	if len(names) == 1 {
		out[names[0]] = Device{Name: names[0], Threads: len(cpus)}
		return out
	}
	per := len(cpus) / max(len(names), 1)
	for i, n := range names {
		if per < 1 {
			out[n] = Device{Name: n, Threads: 1}
			continue
		}
		out[n] = Device{Name: n, Threads: per, CPUs: append([]int(nil), cpus[i*per:(i+1)*per]...)}
	}
	return out
}

// DevicesFrom takes threads and CPUs from a resolved cluster (the --devices the plan was
// made with): host devices by their Threads and CPUs.
func DevicesFrom(c *profile.Cluster) []Device {
	var out []Device
	for _, d := range c.Devices {
		if d.Kind == profile.CPU {
			out = append(out, Device{Name: d.Name, Threads: max(d.Threads, 1), CPUs: d.CPUs})
		}
	}
	return out
}
