package devices

import "github.com/onnxpart/onnxpart/profile"

// archRates are per-SM, per-clock dense operation rates of an NVIDIA GPU generation: what turns
// NVML's SM count and maximum SM clock into peak FLOP/s. Figures from the architecture
// whitepapers (operations per clock per SM; an FMA counts 2):
//
//	P100 (GP100)  Pascal whitepaper: 64 FP32 cores/SM → 128; fp16 2×
//	P4/P40 (GP10x) 128 FP32 cores/SM → 256; DP4A int8 4×; fp16 1/64 (runtimes use fp32)
//	V100 (GV100)  Volta whitepaper: 64 FP32 cores/SM → 128; 8 tensor cores × 64 FMA → 1024 fp16
//	T4/RTX 20 (TU10x) Turing whitepaper: 64 FP32 → 128; 1024 fp16 tensor; 2048 int8
//	A100 (GA100)  A100 whitepaper Table 1: 128 fp32, 1024 tf32, 2048 fp16, 4096 int8
//	GA10x         GA102 whitepaper: 256 fp32, 512 tf32, 1024 fp16, 2048 int8
//	Ada (AD10x)   Ada whitepaper: 256 fp32, 512 tf32, 1024 fp16, 2048 int8
//	H100 (GH100)  H100 whitepaper: 256 fp32, 2048 tf32, 4096 fp16, 8192 int8
//
// GeForce boards run tf32 and fp16-with-fp32-accumulate tensor math at half the rate of the
// data-centre parts (halveGeForce). Peaks derived this way use NVML's maximum SM clock, which
// is the boost clock: for H100 it gives 1070 TFLOP/s fp16 where the data sheet, computed at
// the 1830 MHz tensor clock, says 989.5. The catalog figure is the published one.
type archRates struct {
	name         string
	rate         [profile.NumPrecisions]float64
	nvlinkPerDir float64 // NVLink bandwidth per link and direction, bytes/s
}

func archFor(major, minor int) (archRates, bool) {
	switch {
	case major == 6 && minor == 0:
		return archRates{"pascal (GP100)", [profile.NumPrecisions]float64{128, 128, 256, 128}, 20e9}, true
	case major == 6:
		return archRates{"pascal (GP10x)", [profile.NumPrecisions]float64{256, 256, 256, 1024}, 20e9}, true
	case major == 7 && minor < 5:
		return archRates{"volta", [profile.NumPrecisions]float64{128, 128, 1024, 512}, 25e9}, true
	case major == 7:
		return archRates{"turing", [profile.NumPrecisions]float64{128, 128, 1024, 2048}, 25e9}, true
	case major == 8 && minor == 0:
		return archRates{"ampere (GA100)", [profile.NumPrecisions]float64{128, 1024, 2048, 4096}, 25e9}, true
	case major == 8 && minor == 9:
		return archRates{"ada", [profile.NumPrecisions]float64{256, 512, 1024, 2048}, 25e9}, true
	case major == 8:
		return archRates{"ampere (GA10x)", [profile.NumPrecisions]float64{256, 512, 1024, 2048}, 25e9}, true
	case major == 9:
		return archRates{"hopper", [profile.NumPrecisions]float64{256, 2048, 4096, 8192}, 25e9}, true
	}
	return archRates{}, false
}

// pcieLaneRate is the usable bandwidth of one PCIe lane per direction, bytes/s, by generation
// (transfer rate × encoding efficiency / 8).
var pcieLaneRate = map[int]float64{1: 0.25e9, 2: 0.5e9, 3: 0.985e9, 4: 1.969e9, 5: 3.938e9, 6: 7.563e9}
