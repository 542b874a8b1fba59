package profile

import (
	"math"
	"testing"
)

func TestParseQuantity(t *testing.T) {
	for _, c := range []struct {
		in   string
		unit Unit
		want float64
	}{
		{"80GB", Bytes, 80e9},
		{"40GiB", Bytes, 40 << 30},
		{"512 MiB", Bytes, 512 << 20},
		{"1e9", Bytes, 1e9},
		{"2TB/s", Rate, 2e12},
		{"25GiB/s", Rate, 25 << 30},
		{"100Gbps", Rate, 12.5e9},
		{"44.26Gb/s", Rate, 44.26e9 / 8},
		{"312TFLOPS", FLOPRate, 312e12},
		{"19.5T", FLOPRate, 19.5e12},
		{"624TOPS", FLOPRate, 624e12},
		{"768G", FLOPRate, 768e9},
		{"5us", Seconds, 5e-6},
		{"5µs", Seconds, 5e-6},
		{"1.5ms", Seconds, 1.5e-3},
		{"2", Seconds, 2},
		{"0.55", Plain, 0.55},
		{"55%", Plain, 0.55},
	} {
		got, err := ParseQuantity(c.in, c.unit)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if math.Abs(got-c.want) > 1e-9*math.Abs(c.want) {
			t.Errorf("%q = %g, want %g", c.in, got, c.want)
		}
	}
}

func TestParseQuantityErrors(t *testing.T) {
	for _, c := range []struct {
		in   string
		unit Unit
	}{
		{"", Bytes}, {"GB", Bytes}, {"80GB/s", Bytes}, {"80Gbps", Bytes}, {"2TB", Rate},
		{"5 parsecs", Seconds}, {"-1GB", Bytes}, {"NaN", Plain}, {"Inf", Rate}, {"12 FLOPS/s", FLOPRate},
		{"3x", Plain},
	} {
		if v, err := ParseQuantity(c.in, c.unit); err == nil {
			t.Errorf("%q accepted as %g", c.in, v)
		}
	}
}

func TestFormatQuantity(t *testing.T) {
	for _, c := range []struct {
		v    float64
		unit Unit
		want string
	}{
		{40 << 30, Bytes, "40 GiB"},
		{1555e9, Rate, "1.55 TB/s"},
		{312e12, FLOPRate, "312 TFLOP/s"},
		{19.5e12, FLOPRate, "19.5 TFLOP/s"},
		{5e-6, Seconds, "5 µs"},
		{1.25e-3, Seconds, "1.25 ms"},
		{0, Seconds, "0 s"},
	} {
		if got := FormatQuantity(c.v, c.unit); got != c.want {
			t.Errorf("FormatQuantity(%g) = %q, want %q", c.v, got, c.want)
		}
	}
}
