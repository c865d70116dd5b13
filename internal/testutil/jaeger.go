package testutil

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Jaeger is a Jaeger process (v2, traces in memory) owned by a test: an OTLP collector
// whose query API tells what it received.
type Jaeger struct {
	// OTLP is the OTLP/HTTP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT), OTLPGRPC the gRPC
	// one, Query the query API's base URL.
	OTLP, OTLPGRPC, Query string
	Process               *Process
}

var (
	jaegerOnce sync.Once
	jaegerBin  string
	jaegerErr  error
)

// JaegerBinary returns the Jaeger binary of the version tools/jaeger pins, built once
// per machine into .data/jaeger/ by scripts/jaeger.sh (a few minutes the first time;
// `make test` builds it before the tests run, and later runs reuse it).
func JaegerBinary(t testing.TB) string {
	t.Helper()
	jaegerOnce.Do(func() { jaegerBin, jaegerErr = buildJaeger() })
	if jaegerErr != nil {
		t.Fatalf("jaeger: %v", jaegerErr)
	}
	return jaegerBin
}

// buildJaeger runs scripts/jaeger.sh, which builds the pinned Jaeger into .data/jaeger/
// unless it is there, and returns the binary's path.
func buildJaeger() (string, error) {
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.Command(filepath.Join(filepath.Dir(file), "..", "..", "scripts", "jaeger.sh"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("scripts/jaeger.sh: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// StartJaeger starts Jaeger on free loopback ports with deploy/jaeger/config.yaml and
// waits until it is healthy; it stops at cleanup.
func StartJaeger(t testing.TB) *Jaeger {
	t.Helper()
	bin := JaegerBinary(t)
	_, file, _, _ := runtime.Caller(0)
	config := filepath.Join(filepath.Dir(file), "..", "..", "deploy", "jaeger", "config.yaml")
	addr := func() string { return "127.0.0.1:" + strconv.Itoa(freePort(t)) }
	otlp, grpc, query, health := addr(), addr(), addr(), addr()
	p := StartProcess(t, "jaeger", bin, []string{"JAEGER_OTLP_HTTP_ADDR=" + otlp, "JAEGER_OTLP_GRPC_ADDR=" + grpc,
		"JAEGER_QUERY_ADDR=" + query, "JAEGER_QUERY_GRPC_ADDR=" + addr(), "JAEGER_HEALTH_ADDR=" + health},
		"--config", config)
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get("http://" + health + "/status")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaeger not healthy within 30 s:\n%s", p.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return &Jaeger{OTLP: "http://" + otlp, OTLPGRPC: "http://" + grpc, Query: "http://" + query, Process: p}
}

// Env is the OTEL_ variables that make a process export its traces to j over OTLP/HTTP,
// at once (a batch every 100 ms).
func (j *Jaeger) Env() []string {
	return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + j.OTLP, "OTEL_BSP_SCHEDULE_DELAY=100"}
}

// Span is a span as Jaeger's query API answers it.
type Span struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
	ProcessID string `json:"processID"`
	// Service is the name of the service that sent it (from the trace's processes).
	Service string `json:"-"`
}

// Tag returns the span's tag key as text ("" when it has none).
func (s Span) Tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

// Parent is the span id of the span's parent ("" for a root).
func (s Span) Parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// Trace returns the spans Jaeger holds of a trace (none while it holds none).
func (j *Jaeger) Trace(t testing.TB, traceID string) []Span {
	t.Helper()
	return j.query(t, "/api/traces/"+traceID)
}

// Find returns the spans of the traces of service that have a span with the tag
// key=value.
func (j *Jaeger) Find(t testing.TB, service, key, value string) []Span {
	t.Helper()
	tags, _ := json.Marshal(map[string]string{key: value})
	return j.query(t, "/api/traces?service="+url.QueryEscape(service)+"&lookback=1h&limit=20&tags="+url.QueryEscape(string(tags)))
}

func (j *Jaeger) query(t testing.TB, path string) []Span {
	t.Helper()
	res, err := http.Get(j.Query + path)
	if err != nil {
		t.Fatalf("jaeger query %s: %v", path, err)
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusNotFound {
		return nil
	}
	var body struct {
		Data []struct {
			Spans     []Span `json:"spans"`
			Processes map[string]struct {
				ServiceName string `json:"serviceName"`
			} `json:"processes"`
		} `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("jaeger query %s: %d %v", path, res.StatusCode, err)
	}
	var spans []Span
	for _, tr := range body.Data {
		for _, s := range tr.Spans {
			s.Service = tr.Processes[s.ProcessID].ServiceName
			spans = append(spans, s)
		}
	}
	return spans
}

// ClosedPort returns a loopback host:port on which nothing listens: a collector that
// does not answer.
func ClosedPort(t testing.TB) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(freePort(t))
}
