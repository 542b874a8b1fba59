package devices

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// TimeCall runs f on a locked OS thread and returns its wall time and the CPU time of that
// thread, in seconds. With one intra-op thread, ONNX Runtime computes on the calling thread,
// so the thread's CPU time is the run's cost without the time other processes held the core:
// on a shared machine it is the robust measure, on an idle one it equals the wall time.
func TimeCall(f func() error) (wall, cpu float64, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0 := ThreadCPU()
	t0 := time.Now()
	err = f()
	wall = time.Since(t0).Seconds()
	cpu = ThreadCPU() - c0
	return wall, cpu, err
}

func ThreadCPU() float64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return float64(ts.Sec) + float64(ts.Nsec)*1e-9
}
