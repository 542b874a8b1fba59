// Package units prints the quantities onnxpart reports to people: byte counts in binary
// units. It is the one place that formats bytes, so the command, the planner's messages and
// report.html say a size the same way.
package units

import "fmt"

// Bytes prints a byte count with binary units (B, KiB, MiB, GiB, TiB): two decimals from MiB
// up, one for KiB, none for bytes. A negative count is unknown.
func Bytes(n int64) string {
	if n < 0 {
		return "unknown"
	}
	f := float64(n)
	switch {
	case f >= 1<<40:
		return fmt.Sprintf("%.2f TiB", f/(1<<40))
	case f >= 1<<30:
		return fmt.Sprintf("%.2f GiB", f/(1<<30))
	case f >= 1<<20:
		return fmt.Sprintf("%.2f MiB", f/(1<<20))
	case f >= 1<<10:
		return fmt.Sprintf("%.1f KiB", f/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
