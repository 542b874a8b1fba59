package report

import (
	"math"
	"strconv"
	"strings"
)

// ---- number formatting ----

// fmtFLOPs prints a FLOP count with decimal units.
func fmtFLOPs(f int64) string {
	v := float64(f)
	for _, u := range []struct {
		s string
		v float64
	}{{"TFLOP", 1e12}, {"GFLOP", 1e9}, {"MFLOP", 1e6}, {"kFLOP", 1e3}} {
		if v >= u.v {
			return trimFloat(v/u.v, 3) + " " + u.s
		}
	}
	return strconv.FormatInt(f, 10) + " FLOP"
}

// timeUnit picks the unit for durations up to v seconds.
func timeUnit(v float64) (float64, string) {
	switch a := math.Abs(v); {
	case a == 0 || a >= 1:
		return 1, "s"
	case a >= 1e-3:
		return 1e-3, "ms"
	case a >= 1e-6:
		return 1e-6, "µs"
	}
	return 1e-9, "ns"
}

// fmtSeconds prints a duration with three significant digits.
func fmtSeconds(s float64) string {
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return strconv.FormatFloat(s, 'g', -1, 64) + " s"
	}
	u, name := timeUnit(s)
	return trimFloat(s/u, 3) + " " + name
}

// fmtRate prints inferences per second.
func fmtRate(r float64) string {
	return trimFloat(r, 4) + " /s"
}

// fmtPercent prints a fraction as a percentage with one decimal (two below 1%).
func fmtPercent(f float64) string {
	p := f * 100
	if p > 0 && p < 0.01 {
		return "<0.01%"
	}
	if math.Abs(p) < 1 && p != 0 {
		return strconv.FormatFloat(p, 'f', 2, 64) + "%"
	}
	return strconv.FormatFloat(p, 'f', 1, 64) + "%"
}

// trimFloat prints v with sig significant digits, without exponent or trailing zeros.
func trimFloat(v float64, sig int) string {
	if v == 0 {
		return "0"
	}
	digits := sig - 1 - int(math.Floor(math.Log10(math.Abs(v))))
	if digits < 0 {
		digits = 0
	}
	s := strconv.FormatFloat(v, 'f', digits, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// niceStep rounds a raw tick step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// f1 prints an SVG coordinate with one decimal.
func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
