package emit

import (
	"fmt"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
)

// StateTensor is state a stage keeps on its device between calls (graph.StatePair): the
// model input a serving loop feeds back from the stage's output of the previous call, such as
// a decoder layer's KV cache (past_key_values.3.key ← present.3.key).
type StateTensor struct {
	Input  string `json:"input"`
	Output string `json:"output"`
	// Axis is the axis the state grows along (the Concat's; a KV cache's sequence axis), or
	// null for a pair named with --state that no Concat joins.
	Axis *int `json:"axis"`
	// Bytes is the output's size at the planned dims (the past grown by one call), -1 when
	// unknown; the stage's whole_memory.state_bytes sizes it at --max-dim.
	Bytes int64 `json:"bytes"`
	// AlsoReadBy lists other stages that read the input, as a serving loop must also feed
	// it there (usually for its shape only, e.g. the past length); empty when only the
	// owning stage reads it.
	AlsoReadBy []int `json:"also_read_by"`
}

// addState fills each stage's State with the state pairs whose output it produces.
func (l *Layout) addState(man *Manifest) error {
	g := l.m.Graph
	pairs, err := g.StatePairs(l.opt.State)
	if err != nil {
		return err
	}
	for i := range man.Stages {
		man.Stages[i].State = []StateTensor{}
	}
	for _, p := range pairs {
		owner, ok := l.graphOut[p.Out]
		if !ok || owner < 0 || owner >= len(man.Stages) {
			continue
		}
		st := StateTensor{Input: g.Tensors[p.In].Name, Output: g.Tensors[p.Out].Name, Bytes: g.Tensors[p.Out].Bytes, AlsoReadBy: []int{}}
		if p.Axis >= 0 {
			a := p.Axis
			st.Axis = &a
		}
		for i, sp := range l.stages {
			if i != owner && contains(sp.inputs, p.In) {
				st.AlsoReadBy = append(st.AlsoReadBy, i)
			}
		}
		if len(st.AlsoReadBy) > 0 {
			var on []string
			for _, s := range st.AlsoReadBy {
				on = append(on, fmt.Sprint(s))
			}
			man.Notes = append(man.Notes, diag.Notef(diag.NoteInfo, "state %q is kept by stage %d and also read by stage %s: the serving loop feeds it there too", st.Input, owner, strings.Join(on, ", ")).About(diag.Tensor, st.Input))
		}
		man.Stages[owner].State = append(man.Stages[owner].State, st)
	}
	return nil
}
