package report

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/testmodel"
)

// chromiumPath is Debian's chromium; ONNXPART_CHROMIUM overrides it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	p := os.Getenv("ONNXPART_CHROMIUM")
	if p == "" {
		p = "/usr/bin/chromium"
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("headless Chromium not found at %s (make test-report installs it)", p)
	}
	return p
}

// runChromium runs headless Chromium on a local file with extra flags and returns stdout.
// Everything that could reach the network is off.
func runChromium(t *testing.T, chrome, profile string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--user-data-dir=" + profile}, extra...)
	cmd := exec.CommandContext(ctx, chrome, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, tail(stderr.String(), 2000))
	}
	return stdout.Bytes()
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestReportChromium splits resnet50_small into 4 stages, fills the manifest with
// hand-built predictions and bounds, writes report.html, and has headless Chromium render
// it: the screenshot must not be blank and the rendered DOM must hold one stage box per
// stage. The screenshot is kept at <tmp>/screenshots/report.png and copied to
// /tmp/onnxpart-report.png for a person to look at.
func TestReportChromium(t *testing.T) {
	chrome := chromiumPath(t)
	model := filepath.Join(testmodel.CorpusDir, "resnet50_small.onnx")
	if _, err := os.Stat(model); err != nil {
		t.Skip("model corpus not found at " + testmodel.CorpusDir)
	}
	m, err := ingest.Load(model, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const k = 4
	stages, err := emit.EqualFLOPs(m.Graph, k)
	if err != nil {
		t.Fatal(err)
	}
	a := &emit.Assignment{Stage: stages, Split: emit.SplitInfo{Method: "stages", RequestedStages: k}}
	for i := 0; i < k; i++ {
		a.Devices = append(a.Devices, emit.Device{Name: fmt.Sprintf("gpu%d", i), Provider: "CUDAExecutionProvider"})
	}
	work := t.TempDir()
	out := filepath.Join(work, "out")
	man, err := emit.Write(m, a, out, emit.Options{ModelPath: "resnet50_small.onnx"})
	if err != nil {
		t.Fatal(err)
	}
	if len(man.Stages) != k {
		t.Fatalf("%d stages, want %d", len(man.Stages), k)
	}
	// Hand-built predictions: a slow device so that stage times are visible in µs.
	fillPredictions(man, 2e11, 5e9)
	if err := Write(man, out, Options{Producer: "onnxpart test"}); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(out, File)
	url := "file://" + page

	shots := filepath.Join(work, "screenshots")
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(shots, "report.png")
	runChromium(t, chrome, filepath.Join(work, "profile-shot"), "--screenshot="+shot, "--window-size=1400,1800", url)
	raw, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	if err := os.WriteFile("/tmp/onnxpart-report.png", raw, 0o644); err != nil {
		t.Logf("could not copy the screenshot to /tmp/onnxpart-report.png: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	checkNotBlank(t, img)

	dom := string(runChromium(t, chrome, filepath.Join(work, "profile-dom"), "--dump-dom", url))
	boxes := regexp.MustCompile(`<g class="stage" data-stage="(\d+)"`).FindAllStringSubmatch(dom, -1)
	if len(boxes) != k {
		t.Fatalf("rendered DOM has %d stage boxes, want %d", len(boxes), k)
	}
	for i, b := range boxes {
		if b[1] != strconv.Itoa(i) {
			t.Errorf("box %d is stage %s", i, b[1])
		}
	}
	if n := len(regexp.MustCompile(`data-bottleneck="true"`).FindAllString(dom, -1)); n != 1 {
		t.Errorf("%d bottleneck boxes, want 1", n)
	}
	for _, want := range []string{"slower than the best possible split", "Steady-state pipeline", "resnet50_small.onnx"} {
		if !bytes.Contains([]byte(dom), []byte(want)) {
			t.Errorf("rendered page lacks %q", want)
		}
	}
	t.Logf("screenshot: %s (copied to /tmp/onnxpart-report.png)", shot)
}

// checkNotBlank wants a screenshot of the full window with a good share of non-white
// pixels and some saturated colour (the stage boxes and bars).
func checkNotBlank(t *testing.T, img image.Image) {
	t.Helper()
	b := img.Bounds()
	if b.Dx() != 1400 || b.Dy() != 1800 {
		t.Errorf("screenshot is %dx%d, want 1400x1800", b.Dx(), b.Dy())
	}
	var nonWhite, colourful int
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			if r < 245 || g < 245 || bl < 245 {
				nonWhite++
			}
			if max(r, g, bl)-min(r, g, bl) > 60 {
				colourful++
			}
		}
	}
	total := b.Dx() * b.Dy()
	t.Logf("screenshot: %d of %d pixels not white, %d colourful", nonWhite, total, colourful)
	if nonWhite < total/20 {
		t.Errorf("screenshot looks blank: only %d of %d pixels are not white", nonWhite, total)
	}
	if colourful < total/200 {
		t.Errorf("screenshot has almost no colour (%d pixels): the diagrams did not render", colourful)
	}
}

// TestReportChromiumLongPlan renders a real long plan, GoogLeNet placed on a100-80g,t4,cpu
// for latency (19 stages on 3 devices, a timeline of 99 events; the fixture is the manifest
// of `onnxpart googlenet_small.onnx --devices a100-80g,t4,cpu --objective latency --seed 1
// --time-limit 10s`), in headless Chromium: the pipeline wraps into rows inside the window,
// no box text is cut, devices are named with their products, the timeline is grouped per
// stage and the critical path is marked with no bottleneck. The screenshot is copied to
// /tmp/onnxpart-report-long.png for a person to look at.
func TestReportChromiumLongPlan(t *testing.T) {
	chrome := chromiumPath(t)
	raw, err := os.ReadFile(filepath.Join("testdata", "report", "googlenet_latency_3dev.json"))
	if err != nil {
		t.Fatal(err)
	}
	man, err := emit.DecodeManifest(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(man.Stages) < 15 || len(man.Timeline) <= timelineGroupAbove {
		t.Fatalf("fixture: %d stages, %d events", len(man.Stages), len(man.Timeline))
	}
	work := t.TempDir()
	if err := Write(man, work, Options{Producer: "onnxpart test"}); err != nil {
		t.Fatal(err)
	}
	url := "file://" + filepath.Join(work, File)
	shot := filepath.Join(work, "long.png")
	runChromium(t, chrome, filepath.Join(work, "profile-shot"), "--screenshot="+shot, "--window-size=1400,1800", url)
	png, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	if err := os.WriteFile("/tmp/onnxpart-report-long.png", png, 0o644); err != nil {
		t.Logf("could not copy the screenshot: %v", err)
	}
	img, err := decodePNG(png)
	if err != nil {
		t.Fatal(err)
	}
	checkNotBlank(t, img)

	dom := string(runChromium(t, chrome, filepath.Join(work, "profile-dom"), "--dump-dom", url))
	boxes := regexp.MustCompile(`<g class="stage" data-stage="\d+"[^>]*><title>[^<]*</title><rect x="([0-9.]+)" y="([0-9.]+)" width="([0-9.]+)"`).FindAllStringSubmatch(dom, -1)
	if len(boxes) != len(man.Stages) {
		t.Fatalf("rendered DOM has %d stage boxes, want %d", len(boxes), len(man.Stages))
	}
	rows := map[string]bool{}
	for _, b := range boxes {
		x, _ := strconv.ParseFloat(b[1], 64)
		w, _ := strconv.ParseFloat(b[3], 64)
		if x+w > reportWidth {
			t.Errorf("box at x=%v, width %v, overflows the page", x, w)
		}
		rows[b[2]] = true
	}
	if len(rows) < 3 {
		t.Errorf("%d stages in %d rows, want them wrapped", len(boxes), len(rows))
	}
	for _, want := range []string{">A100-SXM4-80GB<", ">T4<", "gpu1 (T4)", "Events are grouped", "Critical path", "predicted latency"} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered page lacks %q", want)
		}
	}
	if regexp.MustCompile(`class="box-(text|value)"[^>]*>[^<]*…<`).MatchString(dom) {
		t.Error("a box's text is cut")
	}
	if strings.Contains(dom, `data-bottleneck="true"`) || strings.Contains(dom, "predicted bottleneck") {
		t.Error("a latency plan shows a bottleneck")
	}
	t.Logf("screenshot: %s (copied to /tmp/onnxpart-report-long.png)", shot)
}

func decodePNG(b []byte) (image.Image, error) { return png.Decode(bytes.NewReader(b)) }
