package main

import "golang.org/x/sys/unix"

type syscallRusage struct{ ru unix.Rusage }

func getrusage(r *syscallRusage) { _ = unix.Getrusage(unix.RUSAGE_SELF, &r.ru) }

func (r *syscallRusage) seconds() float64 {
	return float64(r.ru.Utime.Sec+r.ru.Stime.Sec) + float64(r.ru.Utime.Usec+r.ru.Stime.Usec)/1e6
}
