package report

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/onnxpart/onnxpart/emit"
)

// ---- view model ----

type reportView struct {
	Title, Producer string
	Sections        []template.HTML
	Summary         string
	Model           modelView
	Split           []kv
	Solver          []kv
	HasPredicted    bool
	Headline        []kv
	PredictionNote  string
	Certificate     certView
	Pipeline        pipelineView
	OneInference    *gantt
	OneNote         string
	Steady          *gantt
	SteadyNote      string
	Memory          memoryView
	Bounds          *boundsView
	Stages          []stageRow
	HasStagePred    bool
	Transfers       []transferRow
	Notes           []string
	Devices         []deviceRow
	TimelineTitle   string
	Batch           *batchView
	Workload        *workloadView
}

// batchView is a batched plan's shares and routes.
type batchView struct {
	Caption string
	Devices []batchDeviceRow
	Routes  []routeRow
}

type batchDeviceRow struct {
	Name, Fill, Busy string
	Inputs, Ops      int
}

type routeRow struct {
	Index, Inputs          int
	Granules, Devices, Dir string
}

func buildBatch(m *emit.Manifest, color map[string]string) *batchView {
	b := m.Batch
	if b == nil {
		return nil
	}
	v := &batchView{Caption: fmt.Sprintf("A batch of %d inputs in %d granules of %d, %s for the batch (%s). Each granule follows one route; this directory holds route 0's stages, every other route its own directory.",
		b.Inputs, b.Granules, b.GranuleInputs, fmtSeconds(b.MakespanS), fmtRate(b.ThroughputPerS))}
	for _, d := range b.Devices {
		v.Devices = append(v.Devices, batchDeviceRow{Name: deviceLabel(m, d.Device), Fill: color[d.Device], Busy: fmtSeconds(d.BusyS), Inputs: d.Inputs, Ops: d.Ops})
	}
	for _, r := range b.Routes {
		v.Routes = append(v.Routes, routeRow{Index: r.Index, Inputs: r.Inputs, Granules: strings.ReplaceAll(emit.GranuleList(r.Granules), ",", ", "),
			Devices: strings.Join(r.Devices, " → "), Dir: r.Dir})
	}
	return v
}

type kv struct{ K, V string }

type modelView struct {
	File, Path, SHA256       string
	FileBytes, Params, FLOPs string
	Nodes                    int
	IRVersion                int64
	Opsets, Dims             []kv
	Symbolic                 string
	ExternalData             bool
	Inputs, Outputs          []tensorRow
}

type tensorRow struct {
	Name, DType, Shape, Bytes, Stage string
}

type deviceRow struct {
	Name, Provider, Kind, Memory, Fill string
	Stages                             string
}

type stageRow struct {
	Index                                 int
	Device, Provider, ProviderShort, Fill string
	Nodes                                 int
	FLOPs, Params                         string
	Weights                               int
	Inputs, Outputs                       string
	Call, Compute, Comm, Overflow, Total  string
	Share                                 string
	Bottleneck, Critical                  bool
	File                                  string
	NodeList                              string
	Duplicated                            int
}

type transferRow struct {
	Tensor   string
	From, To int
	Bytes    string
}

type certView struct {
	Present  bool
	Headline string
	Detail   string
	Optimal  bool
}

type boundsView struct {
	Chart *barChart
	Rows  []boundRow
	// Timed is set when some bound has its computing time.
	Timed bool
	// Word is what the bounds are about: "split" or "placement".
	Word string
}

type boundRow struct {
	Method, Value, Share, Seconds string
	Best                          bool
}

type memoryView struct {
	Chart *barChart
	Note  string
}

// ---- SVG primitives ----

type svgText struct {
	X, Y   float64
	Text   string
	Anchor string // start, middle, end
	Class  string
}

type svgRect struct {
	X, Y, W, H float64
	Fill       string
	Class      string
	Title      string
}

type pipelineView struct {
	Width, Height float64
	Boxes         []stageBox
	Arrows        []arrow
	Texts         []svgText
	SizedBy       string
	// Critical names the stages on the critical path (latency and batched plans); Note says
	// what a batched plan's diagram shows.
	Critical, Note string
}

type stageBox struct {
	Index      int
	X, Y, W, H float64
	Fill       string
	Bottleneck bool
	Critical   bool
	Title      string
	Lines      []svgText
}

type arrow struct {
	D      string
	Labels []svgText
	Title  string
	Class  string
}

type gantt struct {
	Width, Height float64
	Rows          []ganttRow
	Bars          []svgRect
	Texts         []svgText
	Ticks         []tick
	AxisY         float64
	Legend        []legendItem
	Caption       string
}

type ganttRow struct {
	Label      string
	Y, H       float64
	LabelY     float64
	Highlight  bool
	BandX      float64
	BandY      float64
	BandW      float64
	BandH      float64
	Title      string
	StageIndex int
}

type tick struct {
	X      float64
	Y1, Y2 float64
	Label  string
	LabelY float64
}

type legendItem struct {
	Fill, Label string
}

// barChart is a horizontal bar chart: one track per row (the full scale, e.g. capacity)
// with the value drawn over it.
type barChart struct {
	Width, Height float64
	Rows          []barRow
}

type barRow struct {
	Label      string
	LabelY     float64
	Track, Bar svgRect
	Parts      []svgRect // segments of Bar (a stage memory's parts), drawn over it
	Marker     *svgRect
	Text       svgText
	// Sub is a second line under the bar (a stage memory's parts), nil for none: too long to
	// stand beside the bar within the page's width.
	Sub                  *svgText
	Over, Best, Emphasis bool
}

// Layout constants (pixels).
const (
	reportWidth  = 1260.0
	ganttLabelW  = 190.0
	ganttRowH    = 24.0
	ganttRowGap  = 8.0
	boxMinW      = 132.0
	boxH         = 108.0
	boxGap       = 70.0
	pipeMarginX  = 64.0
	barChartRowH = 34.0
	// memPartsLineH is the extra height of a memory bar with its parts on a line below it.
	memPartsLineH = 18.0
)

// palette colours devices (Tableau 10).
var palette = []string{"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7", "#e15759", "#bab0ac"}

// inferencePalette colours the inferences of the steady-state chart.
var inferencePalette = []string{"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7"}
