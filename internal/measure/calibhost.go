package measure

import (
	"context"
	"errors"
	"fmt"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/profile"
)

// ErrNoHost is CalibrateHost's error for a cluster without the host CPU.
var ErrNoHost = errors.New("no host CPU among the devices")

// HostCalibration is what CalibrateHost measured and applied.
type HostCalibration struct {
	// Measurement is the model's ONNX Runtime profile on the host CPU.
	Measurement *profile.Measurement
	// Calibration is what was fitted on it and applied to every host device.
	Calibration *profile.Calibration
	// Measured holds, per device of the cluster, the measured node times (nil for devices
	// other than the host CPU's): CostOptions.Measured.
	Measured [][]float64
	// Host is the device that was profiled (the last host CPU); Calibrated lists every host
	// device the calibration was applied to.
	Host       int
	Calibrated []int
}

// CalibrateHost is `--costs measured` for the host CPU, one path for `onnxpart profile` and the
// planner: it measures ONNX Runtime's call costs on this CPU (MeasureIO, less the host's memory
// bandwidth for the Relu's own pass), profiles the model at path (whose graph is g) with
// threads intra-op threads (MeasureORT), fits the op classes' efficiencies and overheads on
// that profile (Calibrate) and applies the fit to every host device of c in place
// (Calibration.Apply: run overhead, IOBandwidth, LayoutBandwidth, blocked layout). The
// measured node times are returned for CostOptions.Measured. ErrNoHost when c has no host CPU.
func CalibrateHost(ctx context.Context, c *profile.Cluster, path string, g *graph.Graph, threads int) (*HostCalibration, error) {
	host := -1
	for i := range c.Devices {
		if c.Devices[i].Host {
			host = i
		}
	}
	if host < 0 {
		return nil, ErrNoHost
	}
	threads = max(threads, 1)
	io, err := MeasureIO(ctx, threads, 20, c.Devices[host].Bandwidth.Value)
	if err != nil {
		return nil, fmt.Errorf("measuring ONNX Runtime's call costs: %w", err)
	}
	meas, err := MeasureORT(ctx, path, g, MeasureOptions{Threads: threads, IO: &io})
	if err != nil {
		return nil, fmt.Errorf("measuring %s in ONNX Runtime: %w", path, err)
	}
	h := &HostCalibration{Measurement: meas, Host: host, Measured: make([][]float64, len(c.Devices))}
	h.Calibration = profile.Calibrate(&c.Devices[host], []profile.Sample{{Graph: g, Measured: meas}})
	for i := range c.Devices {
		if c.Devices[i].Host {
			h.Calibration.Apply(&c.Devices[i])
			h.Measured[i] = meas.NodeTimes()
			h.Calibrated = append(h.Calibrated, i)
		}
	}
	return h, nil
}
