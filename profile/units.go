package profile

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Unit is the physical dimension of a figure; it decides which suffixes a quantity in a spec
// file may carry and how figures are printed.
type Unit int

// Units of figures.
const (
	Plain    Unit = iota // a bare number (efficiency, ratio)
	Bytes                // bytes: 80GB, 40GiB, 1.5e9
	Rate                 // bytes per second: 2TB/s, 100Gbps, 25GiB/s
	FLOPRate             // operations per second: 312TFLOPS, 19.5T, 624TOPS
	Seconds              // time: 5us, 1.2ms, 2e-6
)

var decimal = map[string]float64{"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
var binaryPrefix = map[string]float64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50}

// ParseQuantity reads a number with an optional unit suffix of the given dimension. Plain
// numbers are in base units (bytes, bytes/s, FLOP/s, seconds). Decimal prefixes (k, M, G, T, P)
// are powers of 1000 and binary ones (Ki, Mi, Gi, Ti) powers of 1024; bit rates (Gbps, Gb/s)
// are divided by 8.
func ParseQuantity(s string, u Unit) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty value")
	}
	// Split the numeric part from the suffix.
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.' || s[i] == '+' || s[i] == '-' ||
		(s[i] == 'e' || s[i] == 'E') && i > 0 && i+1 < len(s) && (s[i+1] >= '0' && s[i+1] <= '9' || s[i+1] == '-' || s[i+1] == '+')) {
		i++
	}
	num, suffix := s[:i], strings.TrimSpace(s[i:])
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("%q is not a number%s", s, unitHint(u))
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("%q must be a finite non-negative number", s)
	}
	if suffix == "" {
		return v, nil
	}
	f, ok := unitFactor(suffix, u)
	if !ok {
		return 0, fmt.Errorf("%q: unknown unit %q%s", s, suffix, unitHint(u))
	}
	return v * f, nil
}

func unitHint(u Unit) string {
	switch u {
	case Bytes:
		return " (want e.g. 80GB, 40GiB, 512MiB)"
	case Rate:
		return " (want e.g. 2TB/s, 25GiB/s, 100Gbps)"
	case FLOPRate:
		return " (want e.g. 312TFLOPS, 19.5T, 624TOPS)"
	case Seconds:
		return " (want e.g. 5us, 1.5ms, 2s)"
	}
	return ""
}

// prefix splits a leading SI or binary prefix off s.
func prefix(s string) (factor float64, rest string) {
	if len(s) >= 2 {
		if f, ok := binaryPrefix[s[:2]]; ok {
			return f, s[2:]
		}
	}
	if len(s) >= 1 {
		if f, ok := decimal[s[:1]]; ok && s[:1] != "" {
			return f, s[1:]
		}
	}
	return 1, s
}

func unitFactor(suffix string, u Unit) (float64, bool) {
	switch u {
	case Seconds:
		switch suffix {
		case "s":
			return 1, true
		case "ms":
			return 1e-3, true
		case "us", "µs", "μs":
			return 1e-6, true
		case "ns":
			return 1e-9, true
		}
		return 0, false
	case Plain:
		if suffix == "%" {
			return 0.01, true
		}
		return 0, false
	}
	f, rest := prefix(suffix)
	if rest == suffix { // no prefix
		f = 1
	}
	switch u {
	case Bytes:
		if rest == "B" {
			return f, true
		}
	case Rate:
		switch rest {
		case "B/s", "Bps":
			return f, true
		case "b/s", "bps", "bit/s":
			return f / 8, true
		}
	case FLOPRate:
		switch strings.ToUpper(rest) {
		case "", "FLOPS", "FLOP/S", "OPS", "OP/S":
			return f, true
		}
	}
	return 0, false
}

// FormatQuantity prints v in the unit's customary form with three significant digits.
func FormatQuantity(v float64, u Unit) string {
	switch u {
	case Bytes:
		return formatBinary(v, "B")
	case Rate:
		return formatDecimal(v, "B/s")
	case FLOPRate:
		return formatDecimal(v, "FLOP/s")
	case Seconds:
		switch a := math.Abs(v); {
		case v == 0:
			return "0 s"
		case a < 1e-6:
			return trim(v*1e9) + " ns"
		case a < 1e-3:
			return trim(v*1e6) + " µs"
		case a < 1:
			return trim(v*1e3) + " ms"
		}
		return trim(v) + " s"
	}
	return trim(v)
}

func formatDecimal(v float64, unit string) string {
	for _, p := range []struct {
		f float64
		s string
	}{{1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if math.Abs(v) >= p.f {
			return trim(v/p.f) + " " + p.s + unit
		}
	}
	return trim(v) + " " + unit
}

func formatBinary(v float64, unit string) string {
	for _, p := range []struct {
		f float64
		s string
	}{{1 << 40, "Ti"}, {1 << 30, "Gi"}, {1 << 20, "Mi"}, {1 << 10, "Ki"}} {
		if math.Abs(v) >= p.f {
			return trim(v/p.f) + " " + p.s + unit
		}
	}
	return trim(v) + " " + unit
}

// trim prints three significant digits without a trailing ".0".
func trim(v float64) string {
	a := math.Abs(v)
	var s string
	switch {
	case a >= 100 || a == 0:
		s = strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		s = strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		s = strconv.FormatFloat(v, 'f', 2, 64)
	default:
		s = strconv.FormatFloat(v, 'g', 3, 64)
	}
	if strings.Contains(s, ".") && !strings.ContainsAny(s, "eE") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
