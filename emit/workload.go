package emit

// PhasePrediction is a planner's prediction for one phase of a workload (--workload), the
// plan's stages serving the phase's calls alone.
type PhasePrediction struct {
	Name string `json:"name"`
	// Dims are the phase's bound dims; Weight its calls per request.
	Dims   map[string]int64 `json:"dims"`
	Weight float64          `json:"weight"`
	// StageS is each stage's time per call of the phase, in stage order.
	StageS         []float64 `json:"stage_s"`
	BottleneckS    float64   `json:"bottleneck_s"`
	ThroughputPerS float64   `json:"throughput_per_s"`
	LatencyS       float64   `json:"latency_s"`
}
