package emit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph"
)

// Format identifies the manifest schema written by this package.
const Format = "onnxpart.manifest/v1"

// ManifestFile is the manifest's file name inside an output directory.
const ManifestFile = "manifest.json"

// Manifest describes a split model: what the model was, which stage computes what on which
// device, what crosses between stages, and (filled by planners before writing) predicted
// costs, lower bounds and solver details. Its JSON form is a contract: field names are
// stable, slices are ordered deterministically and nothing in it depends on the time or on
// the output directory's location.
type Manifest struct {
	Format string    `json:"format"`
	Model  ModelInfo `json:"model"`
	// Objective is what a planner optimised ("throughput", "latency"); null for manual splits.
	Objective Objective `json:"objective"`
	// Devices are the distinct devices the stages run on, in order of first use.
	Devices []DeviceInfo `json:"devices"`
	// Split records how the assignment was made.
	Split     SplitInfo  `json:"split"`
	Stages    []Stage    `json:"stages"`
	Transfers []Transfer `json:"transfers"`
	// Predicted, Bounds and Solver are filled by planners; null for manual splits.
	Predicted *Predicted `json:"predicted"`
	Bounds    *Bounds    `json:"bounds"`
	Solver    *Solver    `json:"solver"`
	// Notes are facts a user should know (dropped or renumbered stages, unknown shapes, …).
	Notes []diag.Note `json:"notes"`
	// Interrupted marks the best plan found before the run was interrupted (Ctrl-C);
	// omitted otherwise.
	Interrupted bool `json:"interrupted,omitempty"`
	// Timeline and Memory are optional planner details shown by the report; omitted when
	// empty (see timeline.go).
	Timeline []TimelineEvent `json:"timeline,omitempty"`
	Memory   []DeviceMemory  `json:"memory,omitempty"`
	// Batch, for a batched-throughput plan (data and model parallel), says how a batch of
	// inputs is shared among the devices; omitted otherwise.
	Batch *Batch `json:"batch,omitempty"`
	// Costs says what priced the plan's nodes when it was not the roofline alone (--costs);
	// omitted otherwise.
	Costs *Costs `json:"cost_sources,omitempty"`
}

// Costs records where a plan's node costs came from.
type Costs struct {
	// Source is "files" (cost files, --costs FILE[,FILE]: reproducible) or "measured"
	// (measured in ONNX Runtime during the run, --costs measured: not reproducible).
	Source string     `json:"source"`
	Files  []CostFile `json:"files,omitempty"`
	// MeasuredShare, for source measured, is the part of the plan's node time measured
	// during the run (per file for source files: CostFile.Share).
	MeasuredShare float64 `json:"measured_share,omitempty"`
	// CalibratedRooflineShare and RooflineShare are the parts of the plan's node time priced
	// by the roofline on devices calibrated from a file, and on devices no file describes.
	CalibratedRooflineShare float64 `json:"calibrated_roofline_share"`
	RooflineShare           float64 `json:"roofline_share"`
}

// CostFile is one cost file a plan was priced with.
type CostFile struct {
	// Path is the file's path as given, SHA256 its content's hash.
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	// Devices are the plan's devices the file describes; Share the part of the plan's node
	// time its measured entries priced.
	Devices []string `json:"devices"`
	Share   float64  `json:"share"`
}

// Batch describes a batched-throughput plan (seed 003 §3.2): a batch of Inputs inputs is cut
// into Granules granules of GranuleInputs inputs; every granule follows one route, a chain of
// stages over the devices. The stages of this directory are route 0's; the other routes'
// stage files and manifests are in their own subdirectories (Route.Dir). Granules on one
// device are processed together as one batch per node.
type Batch struct {
	Inputs        int `json:"inputs"`
	Granules      int `json:"granules"`
	GranuleInputs int `json:"granule_inputs"`
	// MakespanS is the predicted time of the whole batch; ThroughputPerS = Inputs / MakespanS.
	MakespanS      float64 `json:"makespan_s"`
	ThroughputPerS float64 `json:"throughput_per_s"`
	// Devices are the batch shares: per device, the inputs whose computation touches it.
	Devices []BatchDevice `json:"devices"`
	Routes  []Route       `json:"routes"`
	// Route is the route whose stages this manifest's directory holds (0: the top one).
	Route int `json:"route"`
	// Dim is the symbolic dim the stage files take the batch along (the leading axis of
	// every tensor that carries it; Options.Batch), "" where none was written.
	Dim string `json:"dim,omitempty"`
}

// BatchDevice is one device's share of a batched plan.
type BatchDevice struct {
	Device string `json:"device"`
	// Ops is the number of the model's nodes with work on the device (in some route's
	// stage on it: the count the stage files and the stage table use); GranuleTasks the
	// number of (planned operator, granule) pairs it computes, an operator being a fused
	// group of nodes where the plan coarsened the graph.
	Ops          int `json:"ops"`
	GranuleTasks int `json:"granule_tasks"`
	// Inputs is the number of inputs whose computation touches the device (the sum over the
	// routes through it), BusyS its predicted compute time for the whole batch.
	Inputs int     `json:"inputs"`
	BusyS  float64 `json:"busy_s"`
	// Model is the device's product and MemoryBytes its capacity, where known: a route's
	// manifest lists only its own stages' devices, and the batch's shares name them all.
	Model       string `json:"model,omitempty"`
	MemoryBytes int64  `json:"memory_bytes,omitempty"`
}

// GranuleList writes granule ids as "0,1,2" (notes, the plan table, the report).
func GranuleList(ids []int) string {
	s := make([]string, len(ids))
	for i, x := range ids {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// Route is the chain of stages a share of the batch follows.
type Route struct {
	Index int `json:"index"`
	// Dir is the route's directory relative to this manifest ("." for route 0, whose stages
	// are this directory's); it holds its own stage files and manifest.json.
	Dir string `json:"dir"`
	// Granules are the granules (0-based) that follow the route; Inputs = len(Granules) ×
	// GranuleInputs.
	Granules []int `json:"granule_ids"`
	Inputs   int   `json:"inputs"`
	// Devices are the devices of the route's stages, in stage order.
	Devices []string `json:"devices"`
}

// Objective is a planner's objective; the empty objective is written as JSON null.
type Objective string

// MarshalJSON implements json.Marshaler.
func (o Objective) MarshalJSON() ([]byte, error) {
	if o == "" {
		return []byte("null"), nil
	}
	return json.Marshal(string(o))
}

// UnmarshalJSON implements json.Unmarshaler.
func (o *Objective) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*o = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*o = Objective(s)
	return nil
}

// ModelInfo identifies the source model.
type ModelInfo struct {
	// Path is the model's path as the user gave it (Options.ModelPath, else the path it was
	// loaded from); FromManifest is the same file relative to the manifest's directory, which
	// finds it from wherever the output is read (ModelFile); File is its base name.
	Path         string           `json:"path"`
	FromManifest string           `json:"from_manifest,omitempty"`
	File         string           `json:"file"`
	SHA256       string           `json:"sha256"`
	FileBytes    int64            `json:"file_bytes"`
	IRVersion    int64            `json:"ir_version"`
	Opsets       map[string]int64 `json:"opsets"`
	Nodes        int              `json:"nodes"`
	// ParamsBytes sums the initializers some node reads; FLOPs the nodes' FLOPs (tensors of
	// unknown shape count 0, see SymbolicDims).
	ParamsBytes int64 `json:"params_bytes"`
	FLOPs       int64 `json:"flops"`
	// Dims are the symbolic dimensions bound when the model was loaded (--dim,
	// --input-shape): the sizes costs, FLOPs and checks used. SymbolicDims are those the
	// stage files keep as dim_param: the unbound ones and, unless Options.FreezeDims, the
	// bound ones too (a dim in both was planned at its Dims size and serves any).
	Dims         map[string]int64 `json:"dims"`
	SymbolicDims []string         `json:"symbolic_dims"`
	ExternalData bool             `json:"external_data"`
	Inputs       []TensorRef      `json:"inputs"`
	// Outputs are the model outputs; Stage says which stage produces each.
	Outputs []TensorRef `json:"outputs"`
}

// TensorRef describes a tensor at a stage boundary or at the model's edge.
type TensorRef struct {
	Name  string `json:"name"`
	DType string `json:"dtype"`
	Shape Shape  `json:"shape"`
	// Shape is the shape the stage files declare; Bytes the tensor's size at the bound dims
	// (ModelInfo.Dims), -1 when that shape is not fully known.
	Bytes int64 `json:"bytes"`
	// Stage is the producing stage: -1 for a model input. Consumers lists, for a stage
	// output, the later stages that read it.
	Stage     int   `json:"producer_stage"`
	Consumers []int `json:"consumer_stages,omitempty"`
	// ModelInput and ModelOutput mark tensors at the model's edge.
	ModelInput  bool `json:"model_input,omitempty"`
	ModelOutput bool `json:"model_output,omitempty"`
}

// DeviceInfo names a device stages run on.
type DeviceInfo struct {
	Name string `json:"name"`
	// Provider is the ONNX Runtime execution provider, e.g. CPUExecutionProvider.
	Provider string `json:"provider"`
	// Kind and MemoryBytes are filled by planners that know the device.
	Kind        string `json:"kind,omitempty"`
	MemoryBytes int64  `json:"memory_bytes,omitempty"`
	// Model is the product name ("NVIDIA A100-SXM4-80GB"); Catalog the catalog key or spec
	// name the device came from.
	Model   string `json:"model,omitempty"`
	Catalog string `json:"catalog,omitempty"`
	// NVMLIndex, UUID and PCIBusID identify a GPU found by --devices auto.
	NVMLIndex *int   `json:"nvml_index,omitempty"`
	UUID      string `json:"uuid,omitempty"`
	PCIBusID  string `json:"pci_bus_id,omitempty"`
	// CUDADeviceID is the CUDA ordinal a serving process passes to the CUDA execution
	// provider (device_id) and Triton's instance_group.gpus for this GPU.
	CUDADeviceID *int `json:"cuda_device_id,omitempty"`
}

// DeviceLabel names a device for people: "gpu0 (A100-SXM4-80GB)", the product without its
// vendor prefix, or the bare name when the product is unknown or is the name. The text
// output and the report label devices with it.
func DeviceLabel(name, model string) string {
	model = strings.TrimPrefix(model, "NVIDIA ")
	if model == "" || model == name {
		return name
	}
	return name + " (" + model + ")"
}

// SetCUDADevice records the CUDA ordinal of device name: in its DeviceInfo, and as the
// device_id provider option of every onnxruntime-genai pipeline entry of a stage on it.
func (m *Manifest) SetCUDADevice(name string, id int) {
	for i := range m.Devices {
		if m.Devices[i].Name == name {
			m.Devices[i].CUDADeviceID = &id
		}
	}
	for i := range m.Stages {
		st := &m.Stages[i]
		if st.Device != name {
			continue
		}
		for _, gs := range st.Pipeline {
			for _, po := range gs.SessionOptions.ProviderOptions {
				for prov, opts := range po {
					if prov == "cuda" || prov == "tensorrt" || prov == "NvTensorRtRtx" {
						opts["device_id"] = fmt.Sprint(id)
					}
				}
			}
		}
	}
}

// SplitInfo records how the assignment was made.
type SplitInfo struct {
	// Method: "cut" (--cut), "stages" (--stages, equal FLOPs), "assignment" (a JSON file),
	// or a planner's name.
	Method string `json:"method"`
	// Cuts are the tensors given to --cut; RequestedStages the k asked for.
	Cuts            []string `json:"cuts,omitempty"`
	RequestedStages int      `json:"requested_stages,omitempty"`
}

// Stage is one stage model.
type Stage struct {
	Index int `json:"index"`
	// Label is the stage's number in the assignment before renumbering.
	Label    int    `json:"label"`
	Device   string `json:"device"`
	Provider string `json:"provider"`
	File     string `json:"file"`
	SHA256   string `json:"sha256"`
	// DataFile holds the stage's external weights (relative to the directory), if any.
	DataFile   string `json:"data_file,omitempty"`
	DataSHA256 string `json:"data_sha256,omitempty"`
	// Nodes are the node names (op#index when unnamed) computed in the stage, in model order;
	// DuplicatedNodes those of them also computed in another stage (weight-only and
	// shape-only nodes).
	Nodes           []string `json:"nodes"`
	DuplicatedNodes []string `json:"duplicated_nodes"`
	FLOPs           int64    `json:"flops"`
	// Weights counts the initializers copied into the stage; ParamsBytes the bytes of every
	// weight the stage holds, counted as the model's params are: those initializers, its
	// Constant nodes' values and the weights inside its control-flow subgraphs.
	// DuplicatedWeights lists the initializers also copied into other stages.
	Weights           int            `json:"weights"`
	ParamsBytes       int64          `json:"params_bytes"`
	DuplicatedWeights []SharedWeight `json:"duplicated_weights"`
	Inputs            []TensorRef    `json:"inputs"`
	Outputs           []TensorRef    `json:"outputs"`
	// Predicted is filled by planners.
	Predicted *StagePrediction `json:"predicted"`
	// Memory is the stage's whole memory on its device, filled by planners (absent from
	// manual splits).
	Memory *StageMemory `json:"whole_memory,omitempty"`
	// State is the state the stage keeps on its device between calls (KV cache pairs).
	State []StateTensor `json:"state"`
	// Pipeline is this stage's element of onnxruntime-genai's decoder "pipeline" array:
	// {"stage<i>": {filename, inputs, outputs, session_options}}; `jq '[.stages[].pipeline]'`
	// gives the whole array.
	Pipeline map[string]GenAIStage `json:"pipeline"`
}

// StageMemory is a stage's whole memory on its device, part by part, in bytes: its weights
// (initializers and Constant-node tensors, each once), the peak of its live activations in
// execution order, its input and output buffers, the graph inputs and outputs it holds (such
// as KV cache) and the device's workspace reserve. TotalBytes is their sum.
type StageMemory struct {
	WeightsBytes     int64 `json:"weights_bytes"`
	ActivationsBytes int64 `json:"activations_bytes"`
	BuffersBytes     int64 `json:"buffers_bytes"`
	StateBytes       int64 `json:"state_bytes"`
	ReserveBytes     int64 `json:"reserve_bytes"`
	TotalBytes       int64 `json:"total_bytes"`
}

// SharedWeight is a weight copied into several stages.
type SharedWeight struct {
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	Stages []int  `json:"stages"`
}

// GenAIStage is the per-model entry of onnxruntime-genai's pipeline configuration.
type GenAIStage struct {
	Filename       string           `json:"filename"`
	Inputs         []string         `json:"inputs"`
	Outputs        []string         `json:"outputs"`
	SessionOptions GenAISessionOpts `json:"session_options"`
	RunOnPrompt    bool             `json:"run_on_prompt"`
	RunOnTokenGen  bool             `json:"run_on_token_gen"`
}

// GenAISessionOpts is the session_options object of a genai pipeline entry.
type GenAISessionOpts struct {
	// ProviderOptions lists execution providers by genai's short names, e.g. [{"cuda": {}}];
	// empty for CPU.
	ProviderOptions []map[string]map[string]string `json:"provider_options"`
}

// Transfer is one tensor sent from a stage to a later one.
type Transfer struct {
	Tensor string `json:"tensor"`
	From   int    `json:"from"`
	To     int    `json:"to"`
	// Bytes is -1 when the tensor's shape is not fully known.
	Bytes int64 `json:"bytes"`
}

// StagePrediction is a planner's predicted time for one stage (seconds per sample).
type StagePrediction struct {
	ComputeS  float64 `json:"compute_s"`
	CommS     float64 `json:"comm_s"`
	OverflowS float64 `json:"overflow_s"`
	// CallS is the fixed cost of the stage's runtime call (session run, synchronisation, host
	// hand-off): the device's run overhead, paid once per input.
	CallS  float64 `json:"call_s,omitempty"`
	TotalS float64 `json:"total_s"`
}

// Predicted is a planner's prediction for the whole pipeline.
type Predicted struct {
	// BottleneckS is the busiest stage's time per inference: what a stream of requests
	// through the stages is limited by (for a throughput plan, the objective).
	BottleneckS float64 `json:"bottleneck_s"`
	// ThroughputPerS is what the plan delivers as optimised: 1/bottleneck for a throughput
	// plan (requests pipelined), 1/latency for a latency plan (one request at a time), the
	// batch's inputs per batch time for a batched plan.
	ThroughputPerS float64 `json:"throughput_per_s"`
	// LatencyS is one request's time through every stage and transfer.
	LatencyS float64 `json:"latency_s"`
	// Workload, for a plan made for a mix of phases (--workload), holds each phase's
	// figures; the three above are then per request (the phases' calls weighted).
	Workload []PhasePrediction `json:"workload,omitempty"`
}

// Bounds is the certificate: the best lower bound on the objective (a pipeline's bottleneck,
// a placement's latency, a batch's time) and how it was found.
type Bounds struct {
	LowerBoundS float64 `json:"lower_bound_s"`
	Method      string  `json:"method"`
	// Gap is 1 − lower/upper.
	Gap float64 `json:"gap"`
	// AtMostSlower is upper/lower − 1: the plan is at most this much slower than the best
	// possible one (the same certificate as Gap, in the words a user reads).
	AtMostSlower float64      `json:"at_most_slower"`
	Computed     []BoundValue `json:"computed"`
}

// SlowerOfGap is upper/lower − 1 for a gap of 1 − lower/upper; 0 for no gap, and 0 when the
// gap is 1 (no positive lower bound), which states nothing.
func SlowerOfGap(gap float64) float64 {
	if gap <= 0 || gap >= 1 {
		return 0
	}
	return gap / (1 - gap)
}

// BoundValue is one lower bound a planner computed.
type BoundValue struct {
	Method      string  `json:"method"`
	LowerBoundS float64 `json:"lower_bound_s"`
	// Seconds is the time the bound took; planners leave it 0 (omitted) in manifests, which
	// must be byte-identical across runs.
	Seconds float64 `json:"seconds,omitempty"`
}

// Solver describes the search that produced a plan.
type Solver struct {
	Algorithm string `json:"algorithm"`
	// Seed is the seed of a reproducible run (--seed); nil (omitted) for a run that used
	// the clock, which no seed describes.
	Seed *int64 `json:"seed,omitempty"`
	// Seconds is the planning time; planners leave it 0 (omitted) so that the manifest is
	// byte-identical across runs (`onnxpart --json` reports timings).
	Seconds float64 `json:"seconds,omitempty"`
}

// ModelFile returns where the model of the manifest in dir is: Model.FromManifest, relative
// to dir, when it names a file; else Model.Path as the user gave it (absolute, or relative to
// the directory onnxpart ran in). Manifests written before from_manifest existed held the
// path relative to dir in Path; that is tried last.
func (m *Manifest) ModelFile(dir string) string {
	var candidates []string
	if p := m.Model.FromManifest; p != "" {
		candidates = append(candidates, filepath.Join(dir, filepath.FromSlash(p)))
	}
	p := m.Model.Path
	if filepath.IsAbs(p) {
		candidates = append(candidates, p)
	} else {
		candidates = append(candidates, p, filepath.Join(dir, p))
	}
	for _, c := range candidates {
		if fileExists(c) {
			return c
		}
	}
	return candidates[0]
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// MarshalIndent renders the manifest as indented JSON with a final newline; the same
// manifest always gives the same bytes.
func (m *Manifest) MarshalIndent() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ReadManifest reads DIR/manifest.json and checks its format.
func ReadManifest(dir string) (*Manifest, error) {
	f, err := os.Open(joinDir(dir, ManifestFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return DecodeManifest(f)
}

// DecodeManifest reads a manifest and checks its format (a *diag.Error of kind input if it
// is not an onnxpart manifest).
func DecodeManifest(r io.Reader) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(r)
	if err := dec.Decode(&m); err != nil {
		return nil, diag.Input("manifest: %w", err)
	}
	if m.Format != Format {
		return nil, diag.Input("manifest: format %q, want %q", m.Format, Format)
	}
	return &m, nil
}

// Shape is a tensor shape in JSON: an array of sizes with symbolic dimensions as their names
// ("?" when anonymous), or null when the rank is unknown (the form ingest.ShapeJSON writes).
type Shape graph.Shape

// MarshalJSON implements json.Marshaler.
func (s Shape) MarshalJSON() ([]byte, error) {
	if s == nil {
		return []byte("null"), nil
	}
	out := make([]any, len(s))
	for i, d := range s {
		if d.Known() {
			out[i] = d.Value
		} else {
			out[i] = d.String()
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *Shape) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = nil
		return nil
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(Shape, len(raw))
	for i, r := range raw {
		var name string
		if err := json.Unmarshal(r, &name); err == nil {
			if name == "?" {
				name = ""
			}
			out[i] = graph.Symbolic(name)
			continue
		}
		v, err := strconv.ParseInt(string(r), 10, 64)
		if err != nil || v < 0 {
			return fmt.Errorf("bad dimension %s", r)
		}
		out[i] = graph.Static(v)
	}
	*s = out
	return nil
}

// batchName matches the names exporters give a batch dim: batch, batch_size, Batch, N.
var batchName = regexp.MustCompile(`(?i)^(?:n|.*batch.*)$`)

// BatchDim returns the model's batch dim: the named symbolic dim that leads the first
// model input, when its name says it is a batch (batch, batch_size, N, …); "" otherwise.
func BatchDim(m *Manifest) string {
	p := LeadingDim(m)
	if p == "" || !batchName.MatchString(p) {
		return ""
	}
	return p
}

// LeadingDim is the named symbolic dim that leads the first model input with a shape; ""
// when that dim is known or there is none. Unlike BatchDim it does not look at the name.
func LeadingDim(m *Manifest) string {
	for _, t := range m.Model.Inputs {
		if len(t.Shape) > 0 {
			if d := t.Shape[0]; !d.Known() {
				return d.Param
			}
			return ""
		}
	}
	return ""
}

// Optional planner details for the report (report.html): a timeline of one inference and
// memory per device. Both are omitted from manifest.json when empty, so manual splits and
// planners that do not fill them write the same manifest as before.
//
//	"timeline": [
//	  {"device": "gpu0", "kind": "compute", "label": "stage 0", "stage": 0, "start_s": 0, "end_s": 0.0012},
//	  {"device": "gpu0", "kind": "transfer", "label": "/layer1/Relu_output_0", "stage": 0,
//	   "to_device": "gpu1", "start_s": 0.0012, "end_s": 0.0013}
//	],
//	"memory": [{"device": "gpu0", "used_bytes": 1610612736, "capacity_bytes": 42949672960}]

// Timeline event kinds.
const (
	EventCompute  = "compute"
	EventTransfer = "transfer"
)

// TimelineEvent is one interval of a planner's schedule of a single inference (or of one
// batch): a device computing, or a tensor in flight from Device to ToDevice. Heterogeneous
// placements (package schedule) fill it from the simulator's tasks and transfers.
type TimelineEvent struct {
	Device string `json:"device"`
	// Kind is EventCompute or EventTransfer.
	Kind string `json:"kind"`
	// Label names what runs: a node or group of nodes, or the tensor sent.
	Label string `json:"label"`
	// Stage is the stage the event belongs to (the sending stage for a transfer), -1 when the
	// placement has no stages.
	Stage int `json:"stage"`
	// ToDevice is a transfer's receiving device ("" for compute).
	ToDevice string  `json:"to_device,omitempty"`
	StartS   float64 `json:"start_s"`
	EndS     float64 `json:"end_s"`
}

// DeviceMemory is a planner's estimate of the memory a device needs for its stages
// (weights, activations in flight, workspace) against what it may use.
type DeviceMemory struct {
	Device    string `json:"device"`
	UsedBytes int64  `json:"used_bytes"`
	// CapacityBytes is the memory the planner allowed on the device; 0 when unknown
	// (DeviceInfo.MemoryBytes is used then, if set).
	CapacityBytes int64 `json:"capacity_bytes,omitempty"`
}
