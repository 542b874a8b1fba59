package devices

import (
	"fmt"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/profile"
	"golang.org/x/sys/unix"
)

// The host CPU as several devices.
//
// `--devices cpu:2x1` makes two devices of one thread each out of this machine's CPU,
// `cpu:4` one device of four threads, `2xcpu` two devices sharing the cores equally; a spec
// file says the same with a host device's count and threads:
//
//	devices:
//	  - {name: cpu, type: host, count: 2, threads: 1}
//
// When the host CPU makes more than one device, each gets its own logical CPUs (Device.CPUs),
// consecutive in the set this process may run on, so that their threads never share a core:
// the cost model prices each with its thread count, and whatever runs a device's stages
// (`onnxpart bench`) pins its worker there (PinThread). Two such devices exchange tensors
// through the host's memory (a LinkMemory link at the copy bandwidth).

// hostItemRE matches cpu:T and cpu:MxT (also host:…).
var hostItemRE = regexp.MustCompile(`^(?i:cpu|host)\s*:\s*(?:(\d+)\s*[x×*]\s*)?(\d+)$`)

// parseHostItem reads a --devices item naming the host CPU with a split: "cpu:2x1" gives
// devices=2, threads=1; "cpu:4" devices=1, threads=4. ok is false for other items.
func parseHostItem(s, devicesName string) (devices, threads int, ok bool, err error) {
	m := hostItemRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, 0, false, nil
	}
	devices = 1
	if m[1] != "" {
		devices, err = strconv.Atoi(m[1])
		if err != nil || devices < 1 || devices > maxSpecDevices {
			return 0, 0, true, usagef("%s: %q: the number of devices must be 1 to %d", devicesName, s, maxSpecDevices).About(diag.Option, devicesName)
		}
	}
	threads, err = strconv.Atoi(m[2])
	if err != nil || threads < 1 || threads > 1<<16 {
		return 0, 0, true, usagef("%s: %q: the threads per device must be at least 1", devicesName, s).About(diag.Option, devicesName)
	}
	return devices, threads, true, nil
}

// AllowedCPUs returns the logical CPUs this process may run on, in increasing order (from
// the scheduler's affinity mask; 0…NumCPU−1 when it cannot be read).
func AllowedCPUs() []int {
	var set unix.CPUSet
	var out []int
	if err := unix.SchedGetaffinity(0, &set); err == nil {
		for c := 0; c < len(set)*64; c++ {
			if set.IsSet(c) {
				out = append(out, c)
			}
		}
	}
	if len(out) == 0 {
		for c := range runtime.NumCPU() {
			out = append(out, c)
		}
	}
	return out
}

// pinHostDevices gives every host device of devs its own consecutive share of the allowed
// CPUs (Device.CPUs, Threads of them each) when there are several; a lone host device is
// left unpinned. It fails when the devices' threads add up to more CPUs than there are.
func pinHostDevices(devs []profile.Device, what string) error {
	var hosts []int
	need := 0
	for i := range devs {
		if devs[i].Host {
			hosts = append(hosts, i)
			need += max(devs[i].Threads, 1)
		}
	}
	if len(hosts) < 2 {
		return nil
	}
	cpus := AllowedCPUs()
	if need > len(cpus) {
		msg := fmt.Sprintf("%d host CPU devices with %d threads in all need %d cores on their own, this machine has %d (use fewer devices or threads, e.g. cpu:%dx1)",
			len(hosts), need, need, len(cpus), min(len(hosts), len(cpus)))
		if what != "" {
			msg = what + ": " + msg
		}
		return usagef("%s", msg)
	}
	next := 0
	for _, i := range hosts {
		d := &devs[i]
		t := max(d.Threads, 1)
		d.CPUs = append([]int(nil), cpus[next:next+t]...)
		next += t
		d.Fact("pinned", fmt.Sprintf("logical CPU(s) %s, of %d; no other device of the host runs there", FormatCPUs(d.CPUs), len(cpus)), profile.SourceHost)
	}
	return nil
}

// FormatCPUs writes a CPU list as ranges: "0-3,8".
func FormatCPUs(cpus []int) string {
	c := append([]int(nil), cpus...)
	sort.Ints(c)
	var parts []string
	for i := 0; i < len(c); {
		j := i
		for j+1 < len(c) && c[j+1] == c[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", c[i], c[j]))
		} else {
			parts = append(parts, strconv.Itoa(c[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// hostMemoryLink connects two devices carved out of the host CPU: a tensor moves as one copy
// in the host's memory.
func hostMemoryLink(a, b *profile.Device) profile.Link {
	bw := a.Bandwidth
	if b.Bandwidth.Value > 0 && b.Bandwidth.Value < bw.Value {
		bw = b.Bandwidth
	}
	bw.Note = "two devices of the host CPU share its memory: one copy at the copy bandwidth"
	return profile.Link{Kind: profile.LinkMemory, Name: "host memory", Bandwidth: bw,
		Latency: fig(profile.DefaultLatency[profile.LinkMemory], profile.SourceDefault, profile.LatencyNote)}
}

// PinThread binds the calling OS thread to cpus (the caller must hold it with
// runtime.LockOSThread); an empty list leaves it as it is.
func PinThread(cpus []int) error {
	if len(cpus) == 0 {
		return nil
	}
	var set unix.CPUSet
	set.Zero()
	for _, c := range cpus {
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pinning a thread to CPUs %s: %w", FormatCPUs(cpus), err)
	}
	return nil
}
