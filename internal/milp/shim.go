package milp

// The shim reaches past lanl/highs v1.0.0 to the HiGHS C API for what that wrapper loses or
// lacks (deps-go.md §1d): passing a model with empty rows, running a solve whose status is a
// warning (time limit, interrupt) without discarding its incumbent and dual bound, MIP starts
// and the interrupt/logging callback.
//
// It must not #include <interfaces/highs_c_api.h>: that header defines non-static
// `const HighsInt kHighs…` globals, and a second cgo package including it fails to link with
// "multiple definition". The prototypes below are copied by hand from the HiGHS 1.10.0 header,
// and the constants in shim_consts.go are checked against it by TestHeaderConstants.
//
// Linking: lanl/highs gets `-L<prefix>/lib -lhighs` from pkg-config, and cmd/go puts that after
// the CGO_LDFLAGS copy of the same package, so when lanl/highs is the last cgo package on the
// link line, the static libstdc++/libz/libm named in CGO_LDFLAGS (Makefile) come before
// libhighs.a and the link fails (undefined operator new, fmax…). The `-lhighs` below (found
// through lanl/highs's -L, which ld applies to every -l) puts a libhighs before or after
// lanl/highs's, whichever order the linker picks, and each is followed by some package's copy
// of CGO_LDFLAGS. There is no #cgo pkg-config line, so the cached build does not depend on it.

/*
#cgo LDFLAGS: -lhighs
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

// HIGHSINT64 is off in our HiGHS build (HConfig.h), so HighsInt is a 32-bit int.
// solveInit checks this with Highs_getSizeofHighsInt.
typedef int HighsInt;

// HighsCallbackDataIn from lp_data/HighsCallbackStruct.h. HighsCallbackDataOut is only
// passed through, so it stays opaque here.
typedef struct {
	int user_interrupt;
	double* user_solution;
} onnxpart_cb_data_in;

typedef void (*onnxpart_cb_type)(int, const char*, const void*, onnxpart_cb_data_in*, void*);

void* Highs_create(void);
void Highs_destroy(void* highs);
HighsInt Highs_run(void* highs);
HighsInt Highs_passMip(void* highs, const HighsInt num_col, const HighsInt num_row,
	const HighsInt num_nz, const HighsInt a_format, const HighsInt sense,
	const double offset, const double* col_cost, const double* col_lower,
	const double* col_upper, const double* row_lower, const double* row_upper,
	const HighsInt* a_start, const HighsInt* a_index, const double* a_value,
	const HighsInt* integrality);
HighsInt Highs_passColName(const void* highs, const HighsInt col, const char* name);
HighsInt Highs_getModelStatus(const void* highs);
HighsInt Highs_getIntInfoValue(const void* highs, const char* info, HighsInt* value);
HighsInt Highs_getDoubleInfoValue(const void* highs, const char* info, double* value);
HighsInt Highs_getInt64InfoValue(const void* highs, const char* info, int64_t* value);
HighsInt Highs_getSolution(const void* highs, double* col_value, double* col_dual,
	double* row_value, double* row_dual);
HighsInt Highs_getNumCol(const void* highs);
HighsInt Highs_getSizeofHighsInt(const void* highs);
HighsInt Highs_setSolution(void* highs, const double* col_value, const double* row_value,
	const double* col_dual, const double* row_dual);
HighsInt Highs_setCallback(void* highs, onnxpart_cb_type user_callback, void* user_callback_data);
HighsInt Highs_startCallback(void* highs, const int callback_type);

// onnxpart_ctl is the per-solve state the callback reads. It lives in C memory (calloc) so
// that HiGHS may hold its address for the whole of Highs_run; Go writes it only through
// onnxpart_interrupt.
typedef struct {
	int interrupt;
} onnxpart_ctl;

// onnxpart_callback runs on HiGHS's threads and never calls into Go. Type 0 is
// kHighsCallbackLogging (data_in is NULL then); every other type it is started for is an
// interrupt check (simplex, IPM, MIP), answered from the flag.
static void onnxpart_callback(int type, const char* message, const void* data_out,
	onnxpart_cb_data_in* data_in, void* user_data) {
	onnxpart_ctl* ctl = (onnxpart_ctl*)user_data;
	(void)data_out;
	if (type == 0) {
		if (message != NULL) fputs(message, stderr);
		return;
	}
	if (data_in != NULL && ctl != NULL && __atomic_load_n(&ctl->interrupt, __ATOMIC_ACQUIRE))
		data_in->user_interrupt = 1;
}

static HighsInt onnxpart_set_callback(void* highs, onnxpart_ctl* ctl) {
	return Highs_setCallback(highs, onnxpart_callback, ctl);
}

static void onnxpart_interrupt(onnxpart_ctl* ctl) {
	__atomic_store_n(&ctl->interrupt, 1, __ATOMIC_RELEASE);
}
*/
import "C"

import (
	"runtime"
	"unsafe"

	"github.com/lanl/highs"
	"github.com/onnxpart/onnxpart/diag"
)

// RawModel's only field is `obj unsafe.Pointer` in lanl/highs v1.0.0 (pinned in go.mod).
func init() {
	if unsafe.Sizeof(highs.RawModel{}) != unsafe.Sizeof(unsafe.Pointer(nil)) {
		panic("milp: lanl/highs RawModel layout changed; the shim needs updating")
	}
}

// instance is one HiGHS object. It is created through lanl/highs (so options can be set with
// its typed setters), but it is owned here: the RawModel's finalizer is removed and free
// destroys the object, so that neither the GC-finalizer use-after-free of v1.0.0
// (deps-go.md §1d.2) nor a large C allocation that the Go GC does not see can outlive a solve.
type instance struct {
	raw *highs.RawModel
	obj unsafe.Pointer
	ctl *C.onnxpart_ctl
}

func newInstance() (*instance, error) {
	raw := highs.NewRawModel()
	runtime.SetFinalizer(raw, nil)
	in := &instance{raw: raw, obj: *(*unsafe.Pointer)(unsafe.Pointer(raw))}
	if in.obj == nil {
		return nil, diag.Internal("milp: Highs_create returned NULL")
	}
	if n := C.Highs_getSizeofHighsInt(in.obj); n != 4 || unsafe.Sizeof(C.HighsInt(0)) != 4 {
		in.free()
		return nil, diag.Internal("milp: HiGHS was built with %d-byte HighsInt, the shim assumes 4", n)
	}
	return in, nil
}

// free destroys the HiGHS object and the callback state. Safe to call twice.
func (in *instance) free() {
	if in.obj != nil {
		C.Highs_destroy(in.obj)
		in.obj = nil
	}
	if in.ctl != nil {
		C.free(unsafe.Pointer(in.ctl))
		in.ctl = nil
	}
	runtime.KeepAlive(in.raw)
}

// pass loads the model (row-wise sparse matrix; integrality nil for an LP).
func (in *instance) pass(maximize bool, cost, colLo, colHi, rowLo, rowHi []float64,
	start, index []int32, value []float64, integrality []int32) callStatus {
	sense := C.HighsInt(1) // kHighsObjSenseMinimize
	if maximize {
		sense = -1 // kHighsObjSenseMaximize
	}
	st := C.Highs_passMip(in.obj, C.HighsInt(len(cost)), C.HighsInt(len(rowLo)), C.HighsInt(len(value)),
		2, // kHighsMatrixFormatRowwise
		sense, 0,
		f64ptr(cost), f64ptr(colLo), f64ptr(colHi), f64ptr(rowLo), f64ptr(rowHi),
		intptr(start), intptr(index), f64ptr(value), intptr(integrality))
	return callStatus(st)
}

func (in *instance) passColName(j int, name string) callStatus {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return callStatus(C.Highs_passColName(in.obj, C.HighsInt(j), cs))
}

// setStart hands HiGHS a full primal assignment as a MIP start.
func (in *instance) setStart(x []float64) callStatus {
	return callStatus(C.Highs_setSolution(in.obj, f64ptr(x), nil, nil, nil))
}

// watch installs the callback. interruptible starts the simplex, IPM and MIP interrupt checks;
// logToStderr routes HiGHS's log through the callback to stderr.
func (in *instance) watch(interruptible, logToStderr bool) error {
	if !interruptible && !logToStderr {
		return nil
	}
	in.ctl = (*C.onnxpart_ctl)(C.calloc(1, C.size_t(unsafe.Sizeof(C.onnxpart_ctl{}))))
	if in.ctl == nil {
		return diag.Internal("milp: out of memory for the callback state")
	}
	if st := callStatus(C.onnxpart_set_callback(in.obj, in.ctl)); st.failed() {
		return diag.Internal("milp: Highs_setCallback failed")
	}
	var types []int
	if logToStderr {
		types = append(types, callbackLogging)
	}
	if interruptible {
		types = append(types, callbackSimplexInterrupt, callbackIpmInterrupt, callbackMipInterrupt)
	}
	for _, t := range types {
		if st := callStatus(C.Highs_startCallback(in.obj, C.int(t))); st.failed() {
			return diag.Internal("milp: Highs_startCallback(%d) failed", t)
		}
	}
	return nil
}

// interrupt asks a running solve to stop at HiGHS's next interrupt check. It may be called
// from any goroutine while run is in progress, but not after free.
func (in *instance) interrupt() {
	if in.ctl != nil {
		C.onnxpart_interrupt(in.ctl)
	}
}

func (in *instance) run() callStatus { return callStatus(C.Highs_run(in.obj)) }

func (in *instance) modelStatus() int { return int(C.Highs_getModelStatus(in.obj)) }

func (in *instance) intInfo(name string) (int, bool) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var v C.HighsInt
	ok := callStatus(C.Highs_getIntInfoValue(in.obj, cs, &v)) == statusOK
	return int(v), ok
}

func (in *instance) floatInfo(name string) (float64, bool) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var v C.double
	ok := callStatus(C.Highs_getDoubleInfoValue(in.obj, cs, &v)) == statusOK
	return float64(v), ok
}

func (in *instance) int64Info(name string) (int64, bool) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var v C.int64_t
	ok := callStatus(C.Highs_getInt64InfoValue(in.obj, cs, &v)) == statusOK
	return int64(v), ok
}

// primal returns the column values of HiGHS's current solution, or nil when its size does not
// match the model.
func (in *instance) primal(numCol int) []float64 {
	if n := int(C.Highs_getNumCol(in.obj)); n != numCol || numCol == 0 {
		return nil
	}
	x := make([]float64, numCol)
	C.Highs_getSolution(in.obj, (*C.double)(unsafe.Pointer(&x[0])), nil, nil, nil)
	return x
}

// callStatus is a kHighsStatus value.
type callStatus int

const (
	statusError   callStatus = -1
	statusOK      callStatus = 0
	statusWarning callStatus = 1
)

func (s callStatus) failed() bool { return s == statusError }

func f64ptr(s []float64) *C.double {
	if len(s) == 0 {
		return nil
	}
	return (*C.double)(unsafe.Pointer(&s[0]))
}

// intptr passes an []int32 as HighsInt* (newInstance checks that HighsInt has 4 bytes).
func intptr(s []int32) *C.HighsInt {
	if len(s) == 0 {
		return nil
	}
	return (*C.HighsInt)(unsafe.Pointer(&s[0]))
}
