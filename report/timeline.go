package report

import (
	"math"
	"sort"

	"github.com/onnxpart/onnxpart/emit"
)

// CriticalPath returns the indices into events of a chain that takes the schedule from time
// 0 to its end: the event that ends last, then, repeatedly, the event it waited for (one
// that ends when it starts, or the latest that ends before: a compute on the same device or
// a transfer into it for a compute; a compute on the sending device or an earlier transfer
// on the same link for a transfer). A latency plan has no bottleneck stage; the stages of
// this chain are what lengthens its latency. The chain is in time order; nil for no events.
func CriticalPath(events []emit.TimelineEvent) []int {
	last, end := -1, 0.0
	for i, e := range events {
		if last < 0 || e.EndS > end || (e.EndS == end && e.Kind == emit.EventCompute && events[last].Kind != emit.EventCompute) {
			last, end = i, e.EndS
		}
	}
	if last < 0 {
		return nil
	}
	eps := 1e-9 * math.Max(end, 1e-12)
	waitsFor := func(e, f *emit.TimelineEvent) bool {
		if e.Kind == emit.EventTransfer {
			if f.Kind == emit.EventTransfer {
				return f.Device == e.Device && f.ToDevice == e.ToDevice
			}
			return f.Device == e.Device
		}
		if f.Kind == emit.EventTransfer {
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
				(math.Abs(f.EndS-events[next].EndS) <= eps && f.Kind == emit.EventCompute && events[next].Kind != emit.EventCompute) {
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
func CriticalStages(m *emit.Manifest) []int {
	index := map[int]int{}
	for _, s := range m.Stages {
		index[s.Label] = s.Index
	}
	seen := map[int]bool{}
	var out []int
	for _, i := range CriticalPath(m.Timeline) {
		e := m.Timeline[i]
		if e.Kind != emit.EventCompute || e.Stage < 0 {
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
