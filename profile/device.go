package profile

import (
	"fmt"
	"math"

	"github.com/onnxpart/onnxpart/diag"
)

// Source says where a figure comes from, so that every number onnxpart prints or uses can be
// traced back to NVML, the built-in catalog, the user's spec file, a measurement, the operating
// system, or a documented default.
type Source string

// Sources of figures.
const (
	SourceNVML     Source = "nvml"     // queried from the NVIDIA driver (or derived from such queries)
	SourceCatalog  Source = "catalog"  // published spec-sheet figure from the built-in catalog
	SourceSpec     Source = "spec"     // the user's device spec file
	SourceMeasured Source = "measured" // a microbenchmark or an ONNX Runtime profile on this machine
	SourceHost     Source = "host"     // read from the operating system (/proc, CPUID)
	SourceDefault  Source = "default"  // a documented assumption, used when nothing better is known
)

// Figure is one number of the device model together with its source. Note says how it was
// obtained when that is not obvious (the data sheet, the arithmetic from NVML counts, …).
type Figure struct {
	Value  float64
	Source Source
	Note   string
}

// Known reports whether the figure has been set.
func (f Figure) Known() bool { return f.Source != "" }

func fig(v float64, s Source, note string) Figure { return Figure{Value: v, Source: s, Note: note} }

// Kind is the broad class of a device.
type Kind string

// Device kinds.
const (
	GPU         Kind = "gpu"
	CPU         Kind = "cpu"
	Accelerator Kind = "accelerator"
)

func ParseKind(s string) (Kind, bool) {
	switch Kind(s) {
	case GPU, CPU, Accelerator:
		return Kind(s), true
	}
	return "", false
}

// Precision is the arithmetic a node's math runs in; it selects the peak rate.
type Precision int

// Precisions with a peak figure. FP16 stands for the 16-bit tensor rate (fp16 and bf16),
// INT8 for 8-bit integer tensor operations per second.
const (
	FP32 Precision = iota
	TF32
	FP16
	INT8
	NumPrecisions
)

var PrecisionNames = [NumPrecisions]string{"fp32", "tf32", "fp16", "int8"}

// String returns the precision's name: fp32, tf32, fp16 or int8.
func (p Precision) String() string {
	if p >= 0 && p < NumPrecisions {
		return PrecisionNames[p]
	}
	return fmt.Sprintf("precision(%d)", int(p))
}

func ParsePrecision(s string) (Precision, bool) {
	switch s {
	case "bf16":
		return FP16, true
	}
	for i, n := range PrecisionNames {
		if n == s {
			return Precision(i), true
		}
	}
	return 0, false
}

// LinkKind names the physical path of a transfer between two devices.
type LinkKind string

// Link kinds.
const (
	LinkSelf    LinkKind = "self"        // same device: transfers are free
	LinkNVLink  LinkKind = "nvlink"      // NVLink, directly or through NVSwitch
	LinkPCIe    LinkKind = "pcie"        // PCIe peer-to-peer, or device↔host over PCIe
	LinkStaged  LinkKind = "host-staged" // device→host→device copy when there is no P2P path
	LinkNetwork LinkKind = "network"     // InfiniBand, Ethernet: devices in different hosts
	LinkMemory  LinkKind = "memory"      // host memory shared by a CPU device and the host
	LinkCustom  LinkKind = "custom"      // given as numbers in a spec file
	LinkNone    LinkKind = "none"        // no direct path; a route through other devices is used
)

// Link is a one-directional connection. Bandwidth is in bytes per second, Latency in
// seconds per transfer: moving b bytes takes b/Bandwidth + Latency.
type Link struct {
	Kind      LinkKind
	Name      string // e.g. "nvlink3 ×12", "pcie4 x16", "ib100"
	Bandwidth Figure
	Latency   Figure
}

// Time is the transfer time of b bytes over the link (0 for LinkSelf, +Inf without bandwidth).
func (l Link) Time(b float64) float64 {
	if l.Kind == LinkSelf || b <= 0 {
		return 0
	}
	if l.Bandwidth.Value <= 0 {
		return math.Inf(1)
	}
	return b/l.Bandwidth.Value + l.Latency.Value
}

// NVMLIdentity is how NVML names a GPU.
type NVMLIdentity struct {
	Index int
	UUID  string
	BusID string
}

// Fact is an informational detail of a device (SM count, clocks, PCIe generation, ISA flags),
// printed by `onnxpart profile` but not used by the cost model.
type Fact struct {
	Key, Value string
	Source     Source
}

// Device is the cost-relevant description of one processor. Every figure carries its source.
type Device struct {
	// Name is unique within a cluster ("gpu0", "cpu", or the spec file's name).
	Name string
	// Model is the product ("NVIDIA A100-SXM4-40GB"); Catalog the catalog entry it came from
	// or was matched to ("" if none).
	Model   string
	Catalog string
	Kind    Kind
	// NVML identifies a GPU found by `--devices auto`: its NVML index (which CUDA also uses
	// unless CUDA_VISIBLE_DEVICES or CUDA_DEVICE_ORDER reorders), UUID and PCI bus id. Nil for
	// devices from the catalog or a spec file.
	NVML *NVMLIdentity
	// Memory is the device memory in bytes; MemoryCap, when known, a lower limit on what
	// onnxpart may use (from a spec file). Use Capacity.
	Memory    Figure
	MemoryCap Figure
	// WorkspaceReserve is the memory the runtime takes on the device besides the stage's
	// tensors (CUDA context, cuBLAS/cuDNN workspaces), in bytes; unknown: Reserve's default.
	WorkspaceReserve Figure
	// Peak is the peak arithmetic rate per precision in operations per second (dense, no
	// sparsity). FP32 is the rate of ordinary (non-tensor) math; the other entries are the
	// matrix rates used by MatMul and convolution.
	Peak [NumPrecisions]Figure
	// Bandwidth is the device memory bandwidth in bytes per second.
	Bandwidth Figure
	// ReadBandwidth is the rate, in bytes per second, at which the device's kernels stream
	// weights from memory: a matrix-vector product (a decoder's token step) reads each weight
	// once, so its time is weight bytes / ReadBandwidth. Unknown: Bandwidth.
	ReadBandwidth Figure
	// Cache is the capacity, in bytes, of the last-level cache the device's threads read from,
	// and CacheBandwidth their read rate from it: when every weight a model streams in a call
	// fits in Cache, the weights are still there at the next call and stream at
	// CacheBandwidth instead (see WeightRate). Unknown (0): weights stream from memory.
	Cache, CacheBandwidth Figure
	// Reads, when measured (the host CPU's read sweep, HostBench.Read, scaled to the
	// device's threads), is the read rate over working sets of increasing size: WeightRate
	// interpolates it at a model's weight bytes, between and beyond the levels.
	Reads []ReadPoint
	// Launch is the fixed cost of one kernel (GPU kernel launch, CPU operator dispatch), s.
	Launch Figure
	// RunOverhead is the fixed cost of one inference call on the device (session run, input
	// binding), s; a pipeline stage pays it once per input.
	RunOverhead Figure
	// HostLink is the device↔host connection (PCIe for a GPU; memory for a CPU device).
	HostLink Link
	// IOBandwidth is the rate, in bytes per second, at which a call on the device takes its
	// inputs and returns its outputs when they stay in the device's memory: the runtime
	// binding's copies on both sides of a stage on a CPU. A stage pays (input + output
	// bytes) / IOBandwidth. Value 0: free (GPUs, whose stage inputs arrive over Links).
	IOBandwidth Figure
	// LayoutBandwidth is the rate, in bytes per second, at which the runtime converts a
	// stage's 4-D boundary tensors between its blocked layout for convolution and pooling
	// (ONNX Runtime's NCHWc on CPUs) and the plain one. Value 0: no conversion.
	LayoutBandwidth Figure
	// NVLink is the aggregate NVLink bandwidth per direction in bytes per second (Value 0 when
	// the device has none).
	NVLink Figure
	// Efficiency maps an op class ("conv", "matmul", …; see OpClass) or an ONNX op type
	// ("Conv", "LayerNormalization") to the fraction of the roofline a node reaches. Op types
	// take precedence over classes; missing entries take the default of the device kind.
	// MemEfficiency, where it has an entry, applies to the memory term instead (calibration
	// fits the two separately); otherwise Efficiency applies to both terms.
	Efficiency    map[string]Figure
	MemEfficiency map[string]Figure
	// Overhead maps an op class to a fixed per-node time replacing Launch, as fitted by
	// calibration (it folds in operator dispatch and the nodes the runtime fuses away).
	Overhead map[string]Figure
	// Facts are informational details (SMs, clocks, PCIe, ISA flags).
	Facts []Fact
	// Threads is the number of CPU threads the figures of a CPU device assume (0 otherwise).
	Threads int
	// VectorWidth is the number of fp32 lanes of a CPU's widest vectors (16 for AVX-512, 8
	// for AVX2); convolution and matrix kernels work on output channels in blocks of that
	// many, so the roofline counts FLOPs with output channels rounded up to it. 0 for none.
	VectorWidth int
	// ChannelAlign is the channel multiple that the runtime's blocked-layout convolution
	// kernels accept on a CPU device (ONNX Runtime's NCHWc kernels block VectorWidth
	// channels; recent releases pad channel counts that are multiples of 4 up to the block,
	// older ones take multiples of the block only). A convolution the rule excludes runs in
	// the plain layout: a depthwise one on a generic path several times slower per FLOP (see
	// Blocked and ClassDepthwisePlain). Measured by MeasureIO; 0: unknown, every convolution
	// is assumed blocked.
	ChannelAlign int
	// Host marks the machine's own CPU (the device that ONNX Runtime measurements describe).
	Host bool
	// CPUs are the logical CPUs a host device's threads are pinned to when the host CPU is
	// split into several devices (cpu:2x1; see pinHostDevices); nil: not pinned.
	CPUs []int
}

// Capacity is the memory onnxpart may place on the device, in bytes: MemoryCap when set,
// else Memory; +Inf when neither is known.
func (d *Device) Capacity() float64 {
	c := math.Inf(1)
	if d.Memory.Known() && d.Memory.Value > 0 {
		c = d.Memory.Value
	}
	if d.MemoryCap.Known() && d.MemoryCap.Value > 0 && d.MemoryCap.Value < c {
		c = d.MemoryCap.Value
	}
	return c
}

// DefaultGPUReserve is the workspace reserve of a GPU without a workspace_reserve figure:
// 256 MiB for the CUDA context and the cuBLAS/cuDNN workspaces ONNX Runtime's CUDA provider
// allocates. It is a conservative default, not a measurement: the context alone is commonly
// a few hundred MiB depending on the driver and the GPU, so a spec file should give the
// figure measured on the deployment (e.g. free memory before and after creating a session).
const DefaultGPUReserve = 256 << 20

// Reserve is the workspace reserve of the device in bytes: WorkspaceReserve when known, else
// DefaultGPUReserve for a GPU and 0 for other devices (a CPU's runtime buffers live in host
// memory that Capacity rarely binds).
func (d *Device) Reserve() float64 {
	if d.WorkspaceReserve.Known() {
		return math.Max(d.WorkspaceReserve.Value, 0)
	}
	if d.Kind == GPU {
		return DefaultGPUReserve
	}
	return 0
}

// PeakFor returns the peak rate for precision p, falling back to FP32 when the device has
// no figure for p.
func (d *Device) PeakFor(p Precision) Figure {
	if p >= 0 && p < NumPrecisions && d.Peak[p].Value > 0 {
		return d.Peak[p]
	}
	return d.Peak[FP32]
}

// Fact records a fact about the device (Device.Facts) with its source.
func (d *Device) Fact(key, value string, src Source) {
	d.Facts = append(d.Facts, Fact{Key: key, Value: value, Source: src})
}

// Host describes the machine onnxpart runs on, when it was probed (auto or cpu devices).
type Host struct {
	Model   string   // CPU model name
	Cores   int      // logical CPUs available to this process
	Flags   []string // ISA extensions relevant to inference (avx2, avx512f, amx-tile, …)
	Memory  Figure   // RAM in bytes
	Bench   *HostBench
	Cached  bool   // the microbenchmark results came from the cache
	CacheAt string // the cache file
}

// Cluster is a set of devices and the links between them: what the placement solvers plan for.
type Cluster struct {
	// Spec is the --devices argument the cluster was resolved from.
	Spec    string
	Devices []Device
	// Links[i][j] is the direct link from device i to device j; Links[i][i] is LinkSelf.
	Links [][]Link
	// Host is the machine's CPU when it was probed; nil otherwise.
	Host *Host
	// Notes are one-line remarks for the user, e.g. why NVML was not used.
	Notes []diag.Note
}

// Index returns the index of the device called name, or -1.
func (c *Cluster) Index(name string) int {
	for i := range c.Devices {
		if c.Devices[i].Name == name {
			return i
		}
	}
	return -1
}

// Capacities returns Capacity for every device.
func (c *Cluster) Capacities() []float64 {
	out := make([]float64, len(c.Devices))
	for i := range c.Devices {
		out[i] = c.Devices[i].Capacity()
	}
	return out
}

// Validate checks that the cluster is usable: at least one device, unique names, a square
// link matrix, positive peaks and bandwidths.
func (c *Cluster) Validate() error {
	if len(c.Devices) == 0 {
		return fmt.Errorf("no devices")
	}
	seen := map[string]bool{}
	for i := range c.Devices {
		d := &c.Devices[i]
		if d.Name == "" {
			return fmt.Errorf("device %d has no name", i)
		}
		if seen[d.Name] {
			return fmt.Errorf("two devices are called %q", d.Name)
		}
		seen[d.Name] = true
		if !(d.Peak[FP32].Value > 0) {
			return fmt.Errorf("device %s: no fp32 peak", d.Name)
		}
		if !(d.Bandwidth.Value > 0) {
			return fmt.Errorf("device %s: no memory bandwidth", d.Name)
		}
	}
	if len(c.Links) != len(c.Devices) {
		return fmt.Errorf("link matrix has %d rows for %d devices", len(c.Links), len(c.Devices))
	}
	for i, row := range c.Links {
		if len(row) != len(c.Devices) {
			return fmt.Errorf("link matrix row %d has %d entries for %d devices", i, len(row), len(c.Devices))
		}
	}
	return nil
}

// CallCalibrated reports whether d's costs of a call (run overhead, I/O and layout
// bandwidths) were measured on this machine (Calibration.Apply) rather than assumed: the
// planner then prices a stage's boundary as StageTime does (see CutTime).
func (d *Device) CallCalibrated() bool {
	return d.Kind == CPU && (d.RunOverhead.Source == SourceMeasured || d.IOBandwidth.Source == SourceMeasured ||
		d.LayoutBandwidth.Source == SourceMeasured)
}
