// Package costs reads and writes cost files (schema costs.v1, format onnxpart.costs/v1):
// per-node times measured in ONNX Runtime on a device, keyed by op signature, with the
// device's identity, call costs, roofline figures and the per-op-class efficiencies fitted
// to what was measured. A file measured once (on the target machine: `onnxpart profile MODEL
// --costs measured -o costs.json`) prices plans anywhere, reproducibly (`onnxpart MODEL
// --costs costs.json`); files measured on different machines combine into one plan.
//
// What goes in: a model's graph, its ONNX Runtime measurement (profile.Measurement) and the
// device it was measured on (FromMeasurement); or the files and a cluster to plan on (Read,
// Apply). What comes out: a file (Write, atomically), or per-device node times for
// profile.CostOptions.Measured with every matched device's roofline figures and calibration
// applied to the cluster, the notes a user should read, and how much of a plan's work each
// file priced (Applied.Shares).
//
// Granularity. ONNX Runtime fuses nodes into kernels; a measurement attributes each kernel's
// time to the original nodes it stands for (internal/measure.MapKernels) and 0 to nodes the
// runtime removed. The file stores those per-node shares, keyed by the node's signature
// (Signature), because that is how the planner consumes measured times: a fused group of the
// planner's rule set costs the sum of its members' times (profile.CostModel.KernelTime). The
// signature includes the op types producing a node's activation inputs, so that a Relu fused
// into the convolution before it (share near 0) and a Relu after an Add (a kernel of its own)
// are different entries. Repeated signatures (the blocks of a ResNet) keep the median over
// their occurrences and the count.
//
// Devices in the files match the devices planned for by this rule (Apply): a file device
// whose identity (kind, product, and threads for a CPU) equals the device's and whose name is
// the device's name; else one with the same identity under another name (a file from the T4
// host names its GPU gpu0, as --devices t4 does, and applies to the T4 of a100-80g,t4); else
// one with the same name and another identity, applied with a note. Several files may match
// one device: a signature is looked up in each, in the order the files were given. Nodes no
// file has a time for are priced by the roofline with the figures and efficiencies of the
// first matching file (its calibration); devices no file matches keep their own figures.
package costs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit/schema"
	"github.com/onnxpart/onnxpart/internal/atomicfs"
)

// Format is the format string of a cost file.
const Format = "onnxpart.costs/v1"

// SchemaName is the file's JSON Schema (emit/schema/costs.v1.json, `onnxpart schema costs.v1`).
const SchemaName = "costs.v1"

// File is a cost file.
type File struct {
	Format string `json:"format"`
	// Date is the day the measurements were taken (YYYY-MM-DD, UTC; SOURCE_DATE_EPOCH pins it).
	Date string `json:"date"`
	// Producer is the onnxpart version that wrote the file.
	Producer string `json:"producer"`
	// ONNXRuntime is the version of the ONNX Runtime library that ran the measurements.
	ONNXRuntime string `json:"onnxruntime"`
	// Models are the models profiled into the file.
	Models  []Model  `json:"models"`
	Devices []Device `json:"devices"`
}

// Model is one model profiled into a file.
type Model struct {
	// Name is the model file's base name, SHA256 its content's hash, Nodes its node count.
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	Nodes  int    `json:"nodes"`
}

// Device is what was measured on one device.
type Device struct {
	// Name is the device's name as --devices named it when it was measured ("cpu", "cpu0",
	// "gpu0").
	Name     string   `json:"name"`
	Identity Identity `json:"identity"`
	// Call is the fixed and per-byte cost of one ONNX Runtime call on the device.
	Call Call `json:"call_cost"`
	// Roofline are the device figures the efficiencies were fitted against.
	Roofline Roofline `json:"roofline"`
	// Classes are the fitted efficiencies and overheads per op class (profile.Calibrate).
	Classes map[string]ClassFit `json:"class_fits"`
	// Entries are the measured node times, sorted by signature.
	Entries []Entry `json:"entries"`
}

// Identity says which device was measured.
type Identity struct {
	Kind        string `json:"kind"`    // cpu, gpu, …
	Product     string `json:"product"` // "Intel(R) Xeon(R) Processor", "NVIDIA A100-SXM4-80GB"
	MemoryBytes int64  `json:"memory_bytes"`
	// Threads is the intra-op thread count of a CPU device (0 otherwise).
	Threads int `json:"threads"`
	// Driver is the GPU driver version, where there is one.
	Driver string `json:"driver,omitempty"`
	// Provider is the ONNX Runtime execution provider that ran the nodes.
	Provider string `json:"provider"`
}

// Call is profile.IOCost: a call costs OverheadS plus IOPerByteS per byte in and out, plus
// LayoutPerByteS per byte a blocked-layout kernel converts; ChannelBlock and ChannelAlign
// describe the runtime's blocked layout (0: none).
type Call struct {
	OverheadS      float64 `json:"overhead_s"`
	IOPerByteS     float64 `json:"io_per_byte_s"`
	LayoutPerByteS float64 `json:"layout_per_byte_s"`
	ChannelBlock   int     `json:"channel_block"`
	ChannelAlign   int     `json:"channel_align"`
}

// Roofline holds the device figures the roofline prices nodes with.
type Roofline struct {
	// PeakFLOPs is the peak rate per precision (fp32, tf32, fp16, int8), operations per second.
	PeakFLOPs map[string]float64 `json:"peak_flops_per_s"`
	// Bandwidth, ReadBandwidth and CacheBandwidth are bytes per second; CacheBytes bytes.
	Bandwidth      float64     `json:"bandwidth_bytes_per_s"`
	ReadBandwidth  float64     `json:"read_bandwidth_bytes_per_s"`
	CacheBytes     float64     `json:"cache_bytes"`
	CacheBandwidth float64     `json:"cache_bandwidth_bytes_per_s"`
	Reads          []ReadPoint `json:"reads,omitempty"`
	LaunchS        float64     `json:"launch_s"`
	VectorWidth    int         `json:"vector_width"`
}

// ReadPoint is one point of a read sweep (profile.ReadPoint).
type ReadPoint struct {
	Bytes int64   `json:"bytes"`
	Rate  float64 `json:"bytes_per_s"`
}

// ClassFit is profile.ClassFit.
type ClassFit struct {
	Eff       float64 `json:"eff"`
	MemEff    float64 `json:"mem_eff"`
	OverheadS float64 `json:"overhead_s"`
	Nodes     int     `json:"nodes"`
}

// Entry is one op signature's measured time.
type Entry struct {
	Signature string `json:"signature"`
	// Op is the node's domain and op type ("Conv", "com.microsoft::FusedMatMul"), Class its op
	// class: for reading, not for matching.
	Op    string `json:"op"`
	Class string `json:"class"`
	// TimeS is the node's time (its share of the runtime's kernel), the median over Count
	// occurrences, seconds.
	TimeS float64 `json:"measured_s"`
	Count int     `json:"count"`
}

// Loaded is a file as read, with the path it was given as and its content's hash.
type Loaded struct {
	Path   string
	SHA256 string
	File   *File
}

// Read reads and checks the cost file at path: valid JSON, the costs.v1 schema (format,
// required fields, no negative or non-numeric times), unique device names and signatures.
// Every fault is a usage error (exit 2) naming the file and, where it can, the line.
func Read(path string) (*Loaded, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, diag.Usage("cannot read the cost file: %v", unwrapPath(err)).About(diag.File, path)
	}
	sum := sha256.Sum256(data)
	l := &Loaded{Path: path, SHA256: hex.EncodeToString(sum[:])}
	bad := func(line int, format string, args ...any) error {
		e := diag.Usage("not a cost file: "+format, args...).About(diag.File, path)
		if line > 0 {
			e = e.AtLine(line)
		}
		return e.Note("schema: %s", SchemaName)
	}
	var probe any
	if err := json.Unmarshal(data, &probe); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, bad(lineAt(data, se.Offset), "invalid JSON: %v", se)
		}
		return nil, bad(0, "invalid JSON: %v", err)
	}
	if m, ok := probe.(map[string]any); ok {
		if f, ok := m["format"].(string); ok && f != Format {
			return nil, bad(lineOf(data, "/format"), "format %q, want %q", f, Format)
		}
	}
	if err := schema.Validate(SchemaName, data); err != nil {
		ptr, msg := firstFailure(err)
		return nil, bad(lineOf(data, ptr), "%s", msg)
	}
	var f File
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, bad(0, "%v", err)
	}
	names := map[string]bool{}
	for i, d := range f.Devices {
		if names[d.Name] {
			return nil, bad(lineOf(data, fmt.Sprintf("/devices/%d/name", i)), "device %q is listed twice", d.Name)
		}
		names[d.Name] = true
		seen := map[string]bool{}
		for j, e := range d.Entries {
			if seen[e.Signature] {
				return nil, bad(lineOf(data, fmt.Sprintf("/devices/%d/entries/%d/signature", i, j)), "device %s: signature %q is listed twice", d.Name, e.Signature)
			}
			seen[e.Signature] = true
		}
	}
	l.File = &f
	return l, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Write writes f to path atomically (a reader sees the old file or the new one), as indented
// JSON with devices, entries and map keys in a fixed order.
func Write(path string, f *File) error {
	f.Format = Format
	for i := range f.Devices {
		d := &f.Devices[i]
		sort.Slice(d.Entries, func(a, b int) bool { return d.Entries[a].Signature < d.Entries[b].Signature })
		if d.Classes == nil {
			d.Classes = map[string]ClassFit{}
		}
		if d.Entries == nil {
			d.Entries = []Entry{}
		}
	}
	if f.Models == nil {
		f.Models = []Model{}
	}
	if f.Devices == nil {
		f.Devices = []Device{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return err
	}
	return atomicfs.WriteFile(path, buf.Bytes(), 0o644)
}

// lineAt is the 1-based line of byte offset off in data.
func lineAt(data []byte, off int64) int {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	return bytes.Count(data[:max(off, 0)], []byte("\n")) + 1
}

var failAt = regexp.MustCompile(`at '([^']*)': (.*)`)

// firstFailure is the JSON pointer and message of the first failing location of a schema
// error ("" and the whole message when it names none).
func firstFailure(err error) (ptr, msg string) {
	s := err.Error()
	for _, line := range strings.Split(s, "\n") {
		if m := failAt.FindStringSubmatch(line); m != nil && strings.TrimSpace(m[2]) != "" {
			return m[1], "at " + displayPtr(m[1]) + ": " + strings.TrimSpace(m[2])
		}
	}
	return "", s
}

func displayPtr(p string) string {
	if p == "" {
		return "the top level"
	}
	return p
}

// lineOf is the line where the value at JSON pointer ptr starts in data (0 when not found).
func lineOf(data []byte, ptr string) int {
	if ptr == "" {
		return 1
	}
	var want []string
	for _, p := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		want = append(want, strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~"))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var stack []frame
	at := func() bool {
		if len(stack) != len(want) {
			return false
		}
		for i, f := range stack {
			k := f.key
			if f.array {
				k = strconv.Itoa(f.idx)
			}
			if k != want[i] {
				return false
			}
		}
		return true
	}
	done := func() { // a value of the innermost container was read
		if n := len(stack); n > 0 {
			if stack[n-1].array {
				stack[n-1].idx++
			} else {
				stack[n-1].wantKey = true
			}
		}
	}
	for {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return 0
		}
		if d, ok := tok.(json.Delim); ok && (d == ']' || d == '}') {
			stack = stack[:len(stack)-1]
			done()
			continue
		}
		if n := len(stack); n > 0 && !stack[n-1].array && stack[n-1].wantKey {
			stack[n-1].key, stack[n-1].wantKey = tok.(string), false
			continue
		}
		if at() {
			// The token starts after the separators the decoder skipped.
			rest := data[off:]
			skip := bytes.IndexFunc(rest, func(r rune) bool { return !strings.ContainsRune(" \t\r\n,:", r) })
			return lineAt(data, off+int64(max(skip, 0)))
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{wantKey: true})
		case json.Delim('['):
			stack = append(stack, frame{array: true})
		default:
			done()
		}
	}
}

// frame is a container lineOf is inside: for an object, the key of the value being read
// (wantKey: the next token is a key); for an array, the index of the next element.
type frame struct {
	array   bool
	key     string
	idx     int
	wantKey bool
}

// finite reports whether every value is a finite number ≥ 0.
func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return false
		}
	}
	return true
}
