package measure

import (
	"math"
	"math/rand"
	"testing"
)

// ioFit recovers a call's fixed cost and cost per byte from synthetic timings in which some
// passes were slowed down by other processes (by up to three times, a different pass for
// each size), and takes the Relu's own pass off at the given bandwidth. Nothing is timed.
func TestIOFitRobustToLoad(t *testing.T) {
	const fixed, gbps = 4e-6, 8.0
	rng := rand.New(rand.NewSource(7))
	var bytes []float64
	var times [][]float64
	for _, side := range ioSides {
		b := float64(2 * 4 * 16 * side * side)
		bytes = append(bytes, b)
		clean := fixed + b/(gbps*1e9)
		var ts []float64
		for p := range ioPasses {
			f := 1.0
			if p != int(side)%ioPasses { // one undisturbed pass per size, at another place each
				f = 1.2 + 1.8*rng.Float64()
			}
			ts = append(ts, clean*f)
		}
		times = append(times, ts)
	}
	gotFixed, per := ioFit(bytes, times, 0)
	if math.Abs(gotFixed-fixed) > 0.01*fixed || math.Abs(1/per/1e9-gbps) > 0.01*gbps {
		t.Errorf("ioFit = %.2f µs + %.2f GB/s, want %.2f µs + %.2f GB/s", gotFixed*1e6, 1/per/1e9, fixed*1e6, gbps)
	}
	// The medians of the passes, what a single pass of an old measurement saw, are off.
	var med [][]float64
	for _, ts := range times {
		med = append(med, []float64{median(ts)})
	}
	if _, p := ioFit(bytes, med, 0); math.Abs(1/p/1e9-gbps) < 0.1*gbps {
		t.Errorf("the loaded passes' medians give %.2f GB/s: the test's load does not disturb", 1/p/1e9)
	}
	// A memory bandwidth of 16 GB/s for the Relu's own pass: 1/8 − 1/16 per GB leaves 16 GB/s.
	if _, p := ioFit(bytes, times, 16e9); math.Abs(1/p/1e9-16) > 0.16 {
		t.Errorf("less the Relu at 16 GB/s: %.2f GB/s, want 16", 1/p/1e9)
	}
	if f, p := ioFit(nil, nil, 0); f != 0 || p != 0 {
		t.Errorf("no timings: %g, %g", f, p)
	}
}
