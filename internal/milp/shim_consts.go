package milp

// HiGHS 1.10.0 C API constants (interfaces/highs_c_api.h), written out by hand because the
// header cannot be included (see shim.go). TestHeaderConstants compares them with the header.
const (
	modelStatusNotset                = 0
	modelStatusLoadError             = 1
	modelStatusModelError            = 2
	modelStatusPresolveError         = 3
	modelStatusSolveError            = 4
	modelStatusPostsolveError        = 5
	modelStatusModelEmpty            = 6
	modelStatusOptimal               = 7
	modelStatusInfeasible            = 8
	modelStatusUnboundedOrInfeasible = 9
	modelStatusUnbounded             = 10
	modelStatusObjectiveBound        = 11
	modelStatusObjectiveTarget       = 12
	modelStatusTimeLimit             = 13
	modelStatusIterationLimit        = 14
	modelStatusUnknown               = 15
	modelStatusSolutionLimit         = 16
	modelStatusInterrupt             = 17
	solutionStatusFeasible           = 2
	callbackLogging                  = 0
	callbackSimplexInterrupt         = 1
	callbackIpmInterrupt             = 2
	callbackMipInterrupt             = 6
)

// headerConstants maps the header's names to the values above, for TestHeaderConstants.
var headerConstants = map[string]int{
	"kHighsModelStatusNotset":                modelStatusNotset,
	"kHighsModelStatusLoadError":             modelStatusLoadError,
	"kHighsModelStatusModelError":            modelStatusModelError,
	"kHighsModelStatusPresolveError":         modelStatusPresolveError,
	"kHighsModelStatusSolveError":            modelStatusSolveError,
	"kHighsModelStatusPostsolveError":        modelStatusPostsolveError,
	"kHighsModelStatusModelEmpty":            modelStatusModelEmpty,
	"kHighsModelStatusOptimal":               modelStatusOptimal,
	"kHighsModelStatusInfeasible":            modelStatusInfeasible,
	"kHighsModelStatusUnboundedOrInfeasible": modelStatusUnboundedOrInfeasible,
	"kHighsModelStatusUnbounded":             modelStatusUnbounded,
	"kHighsModelStatusObjectiveBound":        modelStatusObjectiveBound,
	"kHighsModelStatusObjectiveTarget":       modelStatusObjectiveTarget,
	"kHighsModelStatusTimeLimit":             modelStatusTimeLimit,
	"kHighsModelStatusIterationLimit":        modelStatusIterationLimit,
	"kHighsModelStatusUnknown":               modelStatusUnknown,
	"kHighsModelStatusSolutionLimit":         modelStatusSolutionLimit,
	"kHighsModelStatusInterrupt":             modelStatusInterrupt,
	"kHighsSolutionStatusFeasible":           solutionStatusFeasible,
	"kHighsCallbackLogging":                  callbackLogging,
	"kHighsCallbackSimplexInterrupt":         callbackSimplexInterrupt,
	"kHighsCallbackIpmInterrupt":             callbackIpmInterrupt,
	"kHighsCallbackMipInterrupt":             callbackMipInterrupt,
	"kHighsStatusError":                      int(statusError),
	"kHighsStatusOk":                         int(statusOK),
	"kHighsStatusWarning":                    int(statusWarning),
	"kHighsObjSenseMinimize":                 1,
	"kHighsObjSenseMaximize":                 -1,
	"kHighsMatrixFormatRowwise":              2,
	"kHighsVarTypeContinuous":                0,
	"kHighsVarTypeInteger":                   1,
}
