# onnxpart: the two set-up commands are `make demo` and `make test`. Both install what they
# need on a fresh machine (HiGHS built once into a cache, ONNX Runtime from the npm registry,
# Debian packages with apt-get) through scripts/deps.sh.

SHELL := /bin/bash
GO ?= go
BIN := bin/onnxpart
DEMO_MODEL ?= testdata/models/resnet50_small.onnx

# Dependency locations (evaluated lazily, once; deps.sh installs on first use).
HIGHS_PREFIX = $(eval HIGHS_PREFIX := $(shell scripts/deps.sh highs))$(HIGHS_PREFIX)
ORT_LIB = $(eval ORT_LIB := $(shell scripts/deps.sh ort))$(ORT_LIB)

# Static libstdc++/zlib so the binary needs nothing but libc/libm at run time (deps-go.md §1b).
CGO_ENV = PKG_CONFIG_PATH="$(if $(filter system,$(HIGHS_PREFIX)),$(PKG_CONFIG_PATH),$(HIGHS_PREFIX)/lib/pkgconfig:$(HIGHS_PREFIX)/lib64/pkgconfig)" \
	CGO_ENABLED=1 \
	CGO_LDFLAGS="-l:libstdc++.a -l:libz.a -lm -pthread -static-libgcc" \
	CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations" \
	ONNXPART_ORT_LIB="$(ORT_LIB)"


.PHONY: all build demo test vet unit examples fuzz-short fuzz proto env deps check-link bench clean install \
	test-late test-matrix test-real fuzz-certificates bench-emit bench-fusion bench-fusion-quick test-report test-huge test-corrupt fidelity \
	bench-schedule bench-partition

all: build

deps:
	@test -n "$(HIGHS_PREFIX)" || { echo "HiGHS is not available"; exit 1; }
	@test -n "$(ORT_LIB)" || { echo "ONNX Runtime is not available"; exit 1; }
	@scripts/deps.sh apt pkg-config pkg-config >/dev/null
	@test -f /usr/lib/x86_64-linux-gnu/libz.a -o -f /usr/lib/libz.a || scripts/deps.sh apt-pkg zlib1g-dev

build: deps
	@echo "go build -buildvcs=auto -o $(BIN) ./cmd/onnxpart"
	@$(CGO_ENV) $(GO) build -buildvcs=auto -o $(BIN) ./cmd/onnxpart
	@$(MAKE) -s check-link

# go-nvml links with --unresolved-symbols=ignore-in-object-files, which hides a missing
# libstdc++/zlib until run time; fail the build if any such symbol is left unresolved.
check-link:
	@bad=$$(nm -u $(BIN) | grep -v '@' | grep -v ' w ' | grep -v -i nvml || true); \
	if [ -n "$$bad" ]; then echo "unresolved symbols in $(BIN):"; echo "$$bad" | head -20; exit 1; fi

# The main job on a bundled model with a built-in device set: plan, stage files, manifest,
# report in out/demo/ (out/ also holds the bench targets' tables), then the stages are
# checked against the whole model in ONNX Runtime.
demo: build
	@echo '$$ onnxpart $(DEMO_MODEL) --devices 4xA100-80G -o out/demo --force'
	@$(CGO_ENV) ./$(BIN) $(DEMO_MODEL) --devices 4xA100-80G -o out/demo --force
	@echo; echo '$$ onnxpart verify out/demo'
	@$(CGO_ENV) ./$(BIN) verify out/demo

test: build vet unit examples
	$(MAKE) --no-print-directory -j2 -O test-late

# The later checks run two at a time (each target's output kept together): fuzz-short's
# instrumented builds use most of both cores only while compiling, the others about one core
# each, so together they take less wall time than one after another.
test-late: fuzz-short test-report test-matrix test-corrupt test-huge test-real

vet: deps
	$(CGO_ENV) $(GO) vet ./...

unit: deps
	$(CGO_ENV) $(GO) test -count=1 -timeout 30m ./...

# examples/ is a module of its own that imports the public API by its path, as a program
# outside this repository would (a replace directive points it at this tree).
examples: deps
	cd examples && $(CGO_ENV) $(GO) vet ./... && $(CGO_ENV) $(GO) test -count=1 ./...

# Fuzz targets (package:Target). Each returns a value or an error for any input, never panics
# or hangs; a crasher lands in the package's testdata/fuzz/<Target>/ and then runs in every
# `go test`. -fuzzminimizetime=100x: minimising each new input takes up to 60 s by default,
# which with one worker is most of the run.
FUZZ_TARGETS := ingest:FuzzIngest devices:FuzzSpec partition/instances:FuzzLoadDNN schedule/instances:FuzzReadMoirai \
	partition:FuzzCertificates schedule:FuzzCertificates
FUZZTIME ?= 2m
# make test's short passes count executions rather than seconds: with a duration, Go 1.26's
# fuzz coordinator can fail a target with a bare "context deadline exceeded" when the clock
# runs out while a worker is mid-call on a loaded machine (go.dev/issue/75804, fixed in Go
# 1.27), which failed a CI run with no crasher. 3000 calls take 0.1-2.5 s per target here.
FUZZTIME_SHORT ?= 3000x
FUZZ_FLAGS ?= -fuzzminimizetime=100x

# A few thousand calls of each fuzz target (part of `make test`). A target that is not in its
# package fails the run: `go test -fuzz` with no match fuzzes nothing and passes (FuzzSpec
# moved from profile to devices and was skipped that way).
fuzz-short: deps
	@set -e; for t in $(FUZZ_TARGETS); do \
		grep -qs "^func $${t#*:}(" $${t%%:*}/*_test.go || { echo "fuzz-short: no $${t#*:} in ./$${t%%:*}"; exit 1; }; \
		echo "go test -run='^$$' -fuzz='^$${t#*:}$$' -fuzztime=$(FUZZTIME_SHORT) ./$${t%%:*}"; \
		$(CGO_ENV) $(GO) test -run='^$$' -fuzz="^$${t#*:}\$$" -fuzztime=$(FUZZTIME_SHORT) $(FUZZ_FLAGS) ./$${t%%:*}; \
	done

# Every fuzz target for FUZZTIME each, e.g. make fuzz FUZZTIME=10m FUZZ_FLAGS='-parallel 1 -fuzzminimizetime=100x'.
fuzz: deps
	@set -e; for t in $(FUZZ_TARGETS); do \
		grep -qs "^func $${t#*:}(" $${t%%:*}/*_test.go || { echo "fuzz: no $${t#*:} in ./$${t%%:*}"; exit 1; }; \
		echo "go test -run='^$$' -fuzz='^$${t#*:}$$' -fuzztime=$(FUZZTIME) ./$${t%%:*}"; \
		$(CGO_ENV) $(GO) test -run='^$$' -fuzz="^$${t#*:}\$$" -fuzztime=$(FUZZTIME) $(FUZZ_FLAGS) ./$${t%%:*}; \
	done

# Every corpus model × k ∈ {2,3,5,8} × 6 assignments, each chain verified in ONNX Runtime
# (bit-exact with optimizations disabled, 1e-4 with them enabled; package verify), and each
# manifest's accounting checked against the graph (package emit). About 1 minute on 2 cores.
test-matrix: deps
	set -o pipefail; ONNXPART_FULL_MATRIX=1 $(CGO_ENV) $(GO) test -count=1 -timeout 30m -run '^TestMatrix$$' -v ./verify \
		| grep -E '^(--- |    --- |ok|FAIL)|splits, '
	set -o pipefail; ONNXPART_FULL_MATRIX=1 $(CGO_ENV) $(GO) test -count=1 -timeout 30m -run '^TestMatrixManifest$$' -v ./emit \
		| grep -E '^(--- |ok|FAIL)|splits, '

# The certificate harness at length: CERT_N random instances of each kind (pipelines on
# identical and mixed devices, cost-only tensors, dnn-partitioning inference and training),
# each solved and checked against exhaustive search (partition/certify_test.go), then as many
# latency and batched placements (schedule/certify_*_test.go). `make test` runs a few thousand;
# the default here, 20000 of each partition kind, is 100,000 partition instances (minutes).
CERT_N ?= 20000
fuzz-certificates: deps
	set -o pipefail; ONNXPART_CERT_N=$(CERT_N) $(CGO_ENV) $(GO) test -count=1 -timeout 0 -run '^TestCertificates$$' -v ./partition/ \
		| grep -E '^(--- |ok|FAIL)|instances|certify_test'
	set -o pipefail; ONNXPART_CERT_N=$(CERT_N) $(CGO_ENV) $(GO) test -count=1 -timeout 0 -run '^TestCertificatesLong$$' -v ./schedule/ \
		| grep -E '^(--- |ok|FAIL)|instances|certify'

bench-emit: deps
	$(CGO_ENV) $(GO) test -run '^$$' -bench BenchmarkWriteBERT8 -benchtime 20x ./emit

# Nodes before/after coarsening per corpus model and rule set, and coarsening speed;
# bench-fusion adds MTPP solve time and plan quality with and without coarsening (minutes).
bench-fusion: bench-fusion-quick
	set -o pipefail; ONNXPART_MTPP=1 $(CGO_ENV) $(GO) test -count=1 -timeout 30m -run '^TestMTPPWithCoarsening$$' -v ./fusion | grep -E '^ *(\||MTPP|total)' | sed 's/^ *//'

bench-fusion-quick: deps
	set -o pipefail; $(CGO_ENV) $(GO) test -count=1 -run '^TestCorpusTable$$' -v ./fusion | grep '^ *|' | sed 's/^ *//'
	set -o pipefail; $(CGO_ENV) $(GO) test -count=1 -run '^$$' -bench '^BenchmarkCoarsen$$' -benchtime 5x ./fusion | grep -E '^(Benchmark|ok)'

# Renders report.html of a 4-stage ResNet-50 split in headless Chromium (Debian chromium is
# installed when missing) and checks the screenshot and the rendered DOM; the screenshot is
# copied to /tmp/onnxpart-report.png.
test-report: deps
	scripts/deps.sh apt chromium chromium
	$(CGO_ENV) $(GO) test -count=1 -run '^TestReportChromium(LongPlan)?$$' -v ./report

# 2.5 GiB of generated external weights: load, split in 4, write, check, verify in ONNX
# Runtime; time and peak RSS per phase. ~0.5-2 min, ~3 GiB of disk (ONNXPART_HUGE_DIR=...).
test-huge: deps
	set -o pipefail; ONNXPART_HUGE=1 $(CGO_ENV) $(GO) test -count=1 -timeout 30m -run '^TestHugeModel$$' -v ./verify \
		| grep -E '^(--- |ok|FAIL)|huge_test.go'

# Real models that other people exported (PyTorch, Paddle2ONNX, spox: audio VAD with If
# branches, OCR detection/recognition/classification, a wake-word classifier), fetched from
# npm packages by scripts/realmodels.sh (pinned, sha256-checked, ~20 MB cached outside the
# repo). Each: every tensor's shape against ONNX Runtime, plan on 2xA100-80G + verify, split
# in 2 + verify (realmodels/real_test.go). About 30 s on 2 cores once fetched.
test-real: deps
	set -o pipefail; dir=$$(scripts/realmodels.sh) && ONNXPART_REAL_MODELS="$$dir" $(CGO_ENV) $(GO) test -count=1 -timeout 20m -run '^TestRealModels$$' -v ./realmodels \
		| grep -E '^ *(--- |ok|FAIL)|real_test.go'

# Every corpus model truncated at 16 places and with 16 sets of bit flips (~15 s).
test-corrupt: deps
	set -o pipefail; ONNXPART_FULL_CORRUPT=1 $(CGO_ENV) $(GO) test -count=1 -timeout 30m -run '^TestCorruptedCorpus$$' -v ./verify \
		| grep -E '^(--- |ok|FAIL)|cases of'

# Cost-model fidelity: every corpus model split into 2, 4 and 8 stages; predicted stage times
# on this CPU (1 thread, calibrated three ways) against ONNX Runtime. Prints a table; about
# 10 minutes on 2 cores. Run it on an otherwise idle machine.
MODELS ?= ../shared/models
fidelity: deps
	$(CGO_ENV) $(GO) run ./bench/fidelity -models $(MODELS)

# Pipeline fidelity: every corpus model (testdata/models and MODELS) planned on the host CPU
# split into two one-thread devices (--devices cpu:2x1 --costs measured), its stages run as a
# pipeline in ONNX Runtime (onnxpart bench), against the plan and against one one-thread
# session of the whole model, each benched three times in turn (the best run of each kept).
# Prints a Markdown table (docs/benchmarks-pipeline.md); about 3 minutes on 2 cores. Run it on
# an otherwise idle machine.
.PHONY: fidelity-pipeline
fidelity-pipeline: deps
	@mkdir -p out
	set -o pipefail; $(CGO_ENV) $(GO) run ./bench/pipeline -models "testdata/models $(MODELS)" | tee out/fidelity-pipeline.md

# Decoder cost model (issue 32): Llama decoders generated by internal/llamagen (llama-small, and
# 8 layers of width 512 in float32 and float16) at decode steps after 128 and 1024 tokens and
# prefills of 64 and 256: the whole-model time package profile predicts for the host CPU (one
# thread, ort-cpu groups, roofline costs) against ONNX Runtime, with the predicted terms.
# Prints a Markdown table (docs/benchmarks-decoder.md); about 2 minutes on 2 cores. Run it on an
# otherwise idle machine. BENCH_DECODER_FLAGS=-micro adds the ONNX Runtime kernel
# microbenchmarks behind the CPU defaults; "-gpu a100-80g" TinyLlama-1.1B's decode step on
# catalog GPUs (predicted only; writes 2 GiB to a temporary directory); "-set genai" (or all)
# the GenAI model builder's format instead (internal/genaigen: int4 MatMulNBits at accuracy
# levels 4 and 0, float32, GroupQueryAttention; docs/llm-decoders.md, issue 39).
.PHONY: fidelity-decoder
# Cost files (#42): profile the corpus CNNs and a Llama decoder once into a cost file, plan
# each from it on the host CPU as cpu:2x1, bench the plans in ONNX Runtime, print predicted
# vs measured per stage and the median |error| (docs/costs.md). Minutes; opt-in.
.PHONY: bench-costs
bench-costs: build
	@mkdir -p out
	set -o pipefail; ONNXPART=$(BIN) MODELS=$(MODELS) $(CGO_ENV) bash scripts/bench-costs.sh $(BENCH_COSTS_MODELS) | tee out/bench-costs.md

fidelity-decoder: deps
	@mkdir -p out
	set -o pipefail; $(CGO_ENV) $(GO) run ./bench/decoder $(BENCH_DECODER_FLAGS) | tee out/fidelity-decoder.md

# Held-out families (issue 41): internal/familygen's models planned on mixed devices with the
# latency objective; one Markdown row per plan (docs/benchmarks.md, "Held-out families").
.PHONY: bench-families
bench-families: build
	@mkdir -p out
	set -o pipefail; ONNXPART=$(BIN) $(CGO_ENV) bash scripts/families-table.sh $(BENCH_FAMILIES_FLAGS) | tee out/bench-families.md

# Benchmarks of package schedule (Moirai, RandWire latency/throughput, MILP vs SPLIT timing,
# corpus): about 50 minutes on 2 cores. Subsets: BENCH_SCHEDULE_FLAGS="-tables moirai -budget 10s".
bench-schedule: deps
	@mkdir -p out
	set -o pipefail; $(CGO_ENV) $(GO) run ./bench/schedule $(BENCH_SCHEDULE_FLAGS) | tee out/bench-schedule.md

# Tables of package partition: dnn-partitioning optima, REGAL-like bound quality, ONNX corpus
# (plan, bound, baselines), SliceGraph scaling. The full REGAL table (50 graphs x 6 k x 60 s of
# bounds) takes hours; BENCH_PARTITION_FLAGS="-regal-graphs 8 -regal-bound-time 20s" is shorter.
bench-partition: deps
	@mkdir -p out
	set -o pipefail; $(CGO_ENV) $(GO) run ./bench/partition $(BENCH_PARTITION_FLAGS) | tee out/bench-partition.md

# LLM decoders planned on catalog GPUs: what crosses the stage boundaries with cuts anywhere
# and between layers, and the plan for a prefill + decode workload (docs/llm-decoders.md).
# BENCH_LLM_FLAGS=-large adds TinyLlama-1.1B's shape (writes 2.05 GiB to a temporary dir).
.PHONY: bench-llm
bench-llm: deps
	@mkdir -p out
	set -o pipefail; $(CGO_ENV) $(GO) run ./bench/llmplan $(BENCH_LLM_FLAGS) | tee out/bench-llm.md

# The opt-in ~1 B decoder tier (issue 32): TinyLlama-1.1B's shape with 2.05 GiB of fp16
# external data, generated, loaded, planned for a prefill + decode workload and written out.
.PHONY: test-llm-large
test-llm-large: deps
	ONNXPART_LLAMA_1B=1 $(CGO_ENV) $(GO) test -count=1 -timeout 30m -run 'TestLlama1B|TestTinyLlama1B|1B' ./internal/planner/ ./internal/llamagen/

# The opt-in tier of the model-builder decoders (issue 39): internal/genaigen's 16-layer int4
# decoder checked in ONNX Runtime (a decode step against the longer prefill, int4 against its
# dequantized float32 reference).
.PHONY: test-genai
test-genai: deps
	ONNXPART_GENAI_LARGE=1 $(CGO_ENV) $(GO) test -count=1 -timeout 30m -v -run 'TestMedium' ./internal/genaigen/

# Prints the environment for running `go test` by hand: eval "$$(make -s env)"
env:
	@echo 'export $(CGO_ENV)'

proto:
	scripts/deps.sh protoc
	GOBIN=$(CURDIR)/bin $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
	PATH=$(CURDIR)/bin:$$PATH protoc -I onnxpb/proto --go_out=. --go_opt=module=github.com/onnxpart/onnxpart onnxpb/proto/onnx.proto

install: build
	install -m 0755 $(BIN) $${GOBIN:-$$($(GO) env GOPATH)/bin}/onnxpart

clean:
	rm -rf bin out
