package emit

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
