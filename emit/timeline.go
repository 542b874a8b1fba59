package emit

import (
	"math"
	"sort"
)

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

// CriticalPath returns the indices into events of a chain that takes the schedule from time
// 0 to its end: the event that ends last, then, repeatedly, the event it waited for (one
// that ends when it starts, or the latest that ends before: a compute on the same device or
// a transfer into it for a compute; a compute on the sending device or an earlier transfer
// on the same link for a transfer). A latency plan has no bottleneck stage; the stages of
// this chain are what lengthens its latency. The chain is in time order; nil for no events.
func CriticalPath(events []TimelineEvent) []int {
	last, end := -1, 0.0
	for i, e := range events {
		if last < 0 || e.EndS > end || (e.EndS == end && e.Kind == EventCompute && events[last].Kind != EventCompute) {
			last, end = i, e.EndS
		}
	}
	if last < 0 {
		return nil
	}
	eps := 1e-9 * math.Max(end, 1e-12)
	waitsFor := func(e, f *TimelineEvent) bool {
		if e.Kind == EventTransfer {
			if f.Kind == EventTransfer {
				return f.Device == e.Device && f.ToDevice == e.ToDevice
			}
			return f.Device == e.Device
		}
		if f.Kind == EventTransfer {
			return f.ToDevice == e.Device
		}
		return f.Device == e.Device
	}
	path := []int{last}
	on := map[int]bool{last: true}
	for cur := last; events[cur].StartS > eps; {
		e := &events[cur]
		next := -1
		for i := range events {
			f := &events[i]
			if on[i] || f.EndS > e.StartS+eps || !waitsFor(e, f) {
				continue
			}
			if next < 0 || f.EndS > events[next].EndS+eps ||
				(math.Abs(f.EndS-events[next].EndS) <= eps && f.Kind == EventCompute && events[next].Kind != EventCompute) {
				next = i
			}
		}
		if next < 0 {
			break
		}
		path = append(path, next)
		on[next] = true
		cur = next
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return path
}

// CriticalStages returns the stage indices (Stage.Index) whose computation lies on the
// critical path of the manifest's timeline, in increasing order; nil without a timeline.
func CriticalStages(m *Manifest) []int {
	index := map[int]int{}
	for _, s := range m.Stages {
		index[s.Label] = s.Index
	}
	seen := map[int]bool{}
	var out []int
	for _, i := range CriticalPath(m.Timeline) {
		e := m.Timeline[i]
		if e.Kind != EventCompute || e.Stage < 0 {
			continue
		}
		if s, ok := index[e.Stage]; ok && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Ints(out)
	return out
}
