// Package instances builds schedule.Problems from outside sources: Moirai's sample
// spreadsheets (converted to CSV, see ../shared/benchmarks/moirai/README.md) and RandWire
// graphs (Erdős–Rényi, Watts–Strogatz, Barabási–Albert modules, stacked with 1–4 channels,
// strongly or weakly dependent) costed for devices of given relative speeds (seed 003 §4.1).
package instances

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/onnxpart/onnxpart/schedule"
)

// ReadMoiraiFile reads a Moirai instance CSV; see ReadMoirai.
func ReadMoiraiFile(path string) (*schedule.Problem, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := ReadMoirai(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// ReadMoirai reads a Moirai instance: one row per operator with the columns task, c_task,
// dir_succ, dir_succ_add, p0..p{K-1}, pc00..pc{K-1}{K-1}, mi, m0..m{K-1} (device capacities on
// the first row). Every operator becomes a node (named "op<task>") with the times p·; every
// successor in dir_succ becomes an edge whose transfer times are the pc columns of the matching
// communication task (comma lists follow c_task's order). Edges of a row without communication
// tasks (the virtual source's) are free: the input is on every device. mi becomes the node's
// Weight (Moirai eq. (5) is a static sum); the problem has latency objective and congestion on
// (Moirai eq. (8)).
func ReadMoirai(r io.Reader) (*schedule.Problem, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	rows, err := cr.ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) < 2 {
		return nil, fmt.Errorf("moirai: no operator rows")
	}
	head := rows[0]
	col := map[string]int{}
	for x, h := range head {
		col[strings.TrimSpace(h)] = x
	}
	for _, need := range []string{"task", "c_task", "dir_succ", "mi"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("moirai: missing column %q", need)
		}
	}
	k := 0
	for {
		if _, ok := col[fmt.Sprintf("p%d", k)]; !ok {
			break
		}
		k++
	}
	if k == 0 {
		return nil, fmt.Errorf("moirai: no processing-time columns p0, p1, …")
	}
	for a := range k {
		for b := range k {
			if _, ok := col[fmt.Sprintf("pc%d%d", a, b)]; !ok {
				return nil, fmt.Errorf("moirai: missing column pc%d%d", a, b)
			}
		}
		if _, ok := col[fmt.Sprintf("m%d", a)]; !ok {
			return nil, fmt.Errorf("moirai: missing column m%d", a)
		}
	}
	p := &schedule.Problem{Congestion: true}
	for u := range k {
		p.Devices = append(p.Devices, schedule.Device{Name: fmt.Sprintf("dev%d", u)})
	}
	cell := func(row []string, name string) string {
		x := col[name]
		if x >= len(row) {
			return ""
		}
		return strings.TrimSpace(row[x])
	}
	num := func(row []string, name string, line int) (float64, error) {
		s := cell(row, name)
		if s == "" {
			return 0, nil
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, fmt.Errorf("moirai: line %d, column %s: %v", line, name, err)
		}
		return v, nil
	}
	ints := func(s string, line int, name string) ([]int, error) {
		if s == "" {
			return nil, nil
		}
		var out []int
		for _, f := range strings.Split(s, ",") {
			v, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return nil, fmt.Errorf("moirai: line %d, column %s: %v", line, name, err)
			}
			out = append(out, v)
		}
		return out, nil
	}
	index := map[int]int{} // task id → node index
	type pending struct {
		succ  []int
		comm  []int
		times [][][]float64 // per comm task: K×K
		line  int
	}
	var pend []pending
	for r, row := range rows[1:] {
		line := r + 2
		if len(row) == 0 || cell(row, "task") == "" {
			continue
		}
		id, err := strconv.Atoi(cell(row, "task"))
		if err != nil {
			// Moirai's sheets end with a free-text note row; a non-numeric task ends the table.
			break
		}
		if _, dup := index[id]; dup {
			return nil, fmt.Errorf("moirai: line %d: task %d appears twice", line, id)
		}
		nd := schedule.Node{Name: fmt.Sprintf("op%d", id), Time: make([]float64, k)}
		for u := range k {
			if nd.Time[u], err = num(row, fmt.Sprintf("p%d", u), line); err != nil {
				return nil, err
			}
		}
		if nd.Weight, err = num(row, "mi", line); err != nil {
			return nil, err
		}
		if len(p.Nodes) == 0 {
			for u := range k {
				if p.Devices[u].Memory, err = num(row, fmt.Sprintf("m%d", u), line); err != nil {
					return nil, err
				}
			}
		}
		index[id] = len(p.Nodes)
		p.Nodes = append(p.Nodes, nd)
		pd := pending{line: line}
		if pd.succ, err = ints(cell(row, "dir_succ"), line, "dir_succ"); err != nil {
			return nil, err
		}
		if pd.comm, err = ints(cell(row, "c_task"), line, "c_task"); err != nil {
			return nil, err
		}
		if len(pd.comm) > 0 {
			if len(pd.comm) != len(pd.succ) {
				return nil, fmt.Errorf("moirai: line %d: %d communication tasks for %d successors", line, len(pd.comm), len(pd.succ))
			}
			pd.times = make([][][]float64, len(pd.comm))
			for q := range pd.comm {
				pd.times[q] = make([][]float64, k)
				for a := range k {
					pd.times[q][a] = make([]float64, k)
				}
			}
			for a := range k {
				for b := range k {
					name := fmt.Sprintf("pc%d%d", a, b)
					s := cell(row, name)
					var vals []string
					if s != "" {
						vals = strings.Split(s, ",")
					}
					if len(vals) != len(pd.comm) {
						return nil, fmt.Errorf("moirai: line %d, column %s: %d values for %d communication tasks", line, name, len(vals), len(pd.comm))
					}
					for q, v := range vals {
						x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
						if err != nil {
							return nil, fmt.Errorf("moirai: line %d, column %s: %v", line, name, err)
						}
						if a != b {
							pd.times[q][a][b] = x
						}
					}
				}
			}
		}
		pend = append(pend, pd)
	}
	for from, pd := range pend {
		for q, id := range pd.succ {
			to, ok := index[id]
			if !ok {
				return nil, fmt.Errorf("moirai: line %d: successor %d is not an operator row", pd.line, id)
			}
			e := schedule.Edge{From: from, To: to}
			if pd.times != nil {
				e.Time = pd.times[q]
			} else {
				e.Time = make([][]float64, k) // free: the input is on every device
				for a := range k {
					e.Time[a] = make([]float64, k)
				}
			}
			p.Edges = append(p.Edges, e)
		}
	}
	return p, p.Validate()
}
