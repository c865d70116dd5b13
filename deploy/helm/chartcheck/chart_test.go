package chartcheck

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	"seckill/internal/config"
	"seckill/internal/handler"
	"seckill/internal/handler/handlertest"
)

// root is the repository's top directory; chart the chart's.
func root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

func chart() string { return filepath.Join(root(), "deploy", "helm", "seckill") }

// helm returns the helm binary: on PATH, or where go install puts it. It fails when
// there is none: make test installs it first.
func helm(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	out, err := exec.Command("go", "env", "GOPATH").Output()
	if err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", "helm")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatal("helm is missing: make test installs it (go install helm.sh/helm/v3/cmd/helm@v3.22.0)")
	return ""
}

// valueSets are the chart's values to check: the defaults and each file of ci/.
func valueSets(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chart(), "ci", "*-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for want := range required {
		if !slices.Contains(files, filepath.Join(chart(), "ci", want)) {
			t.Fatalf("want ci/%s among the values checked, found %v", want, files)
		}
	}
	return append([]string{""}, files...)
}

// required is what each values file of ci/ must render, so that the checks below meet
// each way of connecting: the variables every container of the service gets, and
// whether the chart makes the Secret. Sentinel with the Sentinels' own ACL user, from a
// Secret the chart makes; TLS with a CA, a server name and a client certificate, an ACL
// user and MySQL over TLS, from Secrets of the user's.
var required = map[string]struct {
	env         []string
	makesSecret bool
}{
	"sentinel-values.yaml": {env: []string{"SECKILL_REDIS_MASTER_NAME", "SECKILL_REDIS_USERNAME", "SECKILL_REDIS_PASSWORD_FILE",
		"SECKILL_REDIS_SENTINEL_USERNAME", "SECKILL_REDIS_SENTINEL_PASSWORD_FILE"}, makesSecret: true},
	"cluster-values.yaml": {env: []string{"SECKILL_REDIS_CLUSTER"}},
	"settings-values.yaml": {env: []string{"SECKILL_WEBHOOK_ALLOW_PRIVATE", "OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"}},
	"tls-values.yaml": {env: []string{"SECKILL_REDIS_USERNAME", "SECKILL_REDIS_PASSWORD_FILE", "SECKILL_REDIS_TLS",
		"SECKILL_REDIS_TLS_CA_FILE", "SECKILL_REDIS_TLS_SERVER_NAME", "SECKILL_REDIS_TLS_CERT_FILE",
		"SECKILL_REDIS_TLS_KEY_FILE", "SECKILL_MYSQL_TLS_CA_FILE"}},
}

// rendered is the chart's objects for one set of values, decoded.
type rendered struct {
	deployments  map[string]*appsv1.Deployment // by component
	jobs         []*batchv1.Job
	services     []*corev1.Service
	configMaps   []*corev1.ConfigMap
	secrets      []*corev1.Secret
	pdbs         []*policyv1.PodDisruptionBudget
	hpas         []*autoscalingv2.HorizontalPodAutoscaler
	monitors     []*monitoringv1.ServiceMonitor
	rules        []*monitoringv1.PrometheusRule
	kinds        []string
	valuesFile   string
	nginxEnabled bool
}

// decode decodes one object strictly into its type: an unknown or misspelt field, or
// a field given twice, is an error.
func decode(doc []byte, into any) error {
	return yaml.UnmarshalStrict(doc, into)
}

// render runs helm template with a values file ("" for the defaults) and decodes
// every object.
func render(t *testing.T, values string) rendered {
	t.Helper()
	args := []string{"template", "shop", chart()}
	if values != "" {
		args = append(args, "-f", values)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helm(t), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %v: %v\n%s", args, err, stderr.String())
	}
	r := rendered{deployments: map[string]*appsv1.Deployment{}, valuesFile: values}
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(stdout.String(), -1) {
		var meta struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("%s: %v\n%s", values, err, doc)
		}
		if meta.Kind == "" {
			continue // a comment only
		}
		r.kinds = append(r.kinds, meta.Kind)
		var err error
		switch meta.APIVersion + " " + meta.Kind {
		case "apps/v1 Deployment":
			d := &appsv1.Deployment{}
			if err = decode([]byte(doc), d); err == nil {
				r.deployments[d.Spec.Template.Labels["app.kubernetes.io/component"]] = d
			}
		case "batch/v1 Job":
			j := &batchv1.Job{}
			err = decode([]byte(doc), j)
			r.jobs = append(r.jobs, j)
		case "v1 Service":
			s := &corev1.Service{}
			err = decode([]byte(doc), s)
			r.services = append(r.services, s)
		case "v1 ConfigMap":
			c := &corev1.ConfigMap{}
			err = decode([]byte(doc), c)
			r.configMaps = append(r.configMaps, c)
		case "v1 Secret":
			sec := &corev1.Secret{}
			err = decode([]byte(doc), sec)
			r.secrets = append(r.secrets, sec)
		case "policy/v1 PodDisruptionBudget":
			p := &policyv1.PodDisruptionBudget{}
			err = decode([]byte(doc), p)
			r.pdbs = append(r.pdbs, p)
		case "autoscaling/v2 HorizontalPodAutoscaler":
			h := &autoscalingv2.HorizontalPodAutoscaler{}
			err = decode([]byte(doc), h)
			r.hpas = append(r.hpas, h)
		case "monitoring.coreos.com/v1 ServiceMonitor":
			m := &monitoringv1.ServiceMonitor{}
			err = decode([]byte(doc), m)
			r.monitors = append(r.monitors, m)
		case "monitoring.coreos.com/v1 PrometheusRule":
			p := &monitoringv1.PrometheusRule{}
			err = decode([]byte(doc), p)
			r.rules = append(r.rules, p)
		default:
			t.Errorf("%s: %s %s has no decoder here: add its type to this test", values, meta.APIVersion, meta.Kind)
			continue
		}
		if err != nil {
			t.Errorf("%s: %s does not decode strictly: %v", values, meta.Kind, err)
		}
	}
	_, r.nginxEnabled = r.deployments["nginx"]
	return r
}

// TestChart lints and renders the chart with each set of values and checks what it
// renders.
func TestChart(t *testing.T) {
	for _, values := range valueSets(t) {
		name := "defaults"
		if values != "" {
			name = filepath.Base(values)
		}
		t.Run(name, func(t *testing.T) {
			args := []string{"lint", "--strict", chart()}
			if values != "" {
				args = append(args, "-f", values)
			}
			if out, err := exec.Command(helm(t), args...).CombinedOutput(); err != nil {
				t.Fatalf("helm %v: %v\n%s", args, err, out)
			}
			r := render(t, values)
			for _, c := range []string{"api", "worker"} {
				if r.deployments[c] == nil {
					t.Fatalf("no %s Deployment among %v", c, r.kinds)
				}
			}
			checkEnvironment(t, r)
			checkFiles(t, r)
			checkRequired(t, r)
			checkAPI(t, r)
			checkWorker(t, r)
			if d := r.deployments["nginx"]; d != nil {
				checkGrace(t, "nginx", d.Spec.Template.Spec, nginxShutdown)
			}
			checkPods(t, r)
			checkSelectors(t, r)
			checkMigration(t, r)
			checkShipped(t, r)
		})
	}
}

// known is every variable the binaries read: config.Vars, and <NAME>_FILE of a secret.
func known() map[string]config.Var {
	m := map[string]config.Var{}
	for _, v := range config.Vars {
		m[v.Name] = v
		if v.Secret {
			m[v.Name+"_FILE"] = v
		}
	}
	return m
}

// envOf returns a container's environment by name; a name given twice is an error.
func envOf(t *testing.T, c corev1.Container) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, e := range c.Env {
		if _, dup := env[e.Name]; dup {
			t.Errorf("container %s: %s is set twice", c.Name, e.Name)
		}
		if e.ValueFrom != nil {
			t.Errorf("container %s: %s comes from valueFrom; secrets are files (<NAME>_FILE)", c.Name, e.Name)
		}
		env[e.Name] = e.Value
	}
	return env
}

// nginxVariables are the ${NAME}s of the nginx template.
func nginxVariables(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root(), "deploy", "nginx", "seckill.conf.template"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`\$\{([A-Z0-9_]+)\}`).FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = true
	}
	return out
}

// pods are the pods of the service's binaries by component (api, worker, migrate) and
// nginx's, when it is on.
func (r rendered) pods() map[string]corev1.PodSpec {
	pods := map[string]corev1.PodSpec{}
	for c, d := range r.deployments {
		pods[c] = d.Spec.Template.Spec
	}
	for _, j := range r.jobs {
		pods["migrate"] = j.Spec.Template.Spec
	}
	return pods
}

// checkEnvironment: every name a container of the service gets is one the binaries
// read (and one the binary of that container reads), a <NAME>_FILE only for a secret
// of config.Vars; a secret comes only as a file; nginx gets exactly its template's
// variables.
func checkEnvironment(t *testing.T, r rendered) {
	vars := known()
	for component, pod := range r.pods() {
		for _, c := range pod.Containers {
			env := envOf(t, c)
			if component == "nginx" {
				want := nginxVariables(t)
				for n := range env {
					if !want[n] {
						t.Errorf("nginx: %s is not a variable of the template", n)
					}
				}
				for n := range want {
					if _, ok := env[n]; !ok {
						t.Errorf("nginx: the template's %s is not set", n)
					}
				}
				continue
			}
			binary := map[string]string{"api": config.API, "migrate": config.API, "worker": config.Worker}[component]
			for n := range env {
				v, ok := vars[n]
				switch {
				case strings.HasPrefix(n, "OTEL_") && !ok:
					// The OpenTelemetry SDK's own variables, read by both binaries
					// (docs/configuration.md, Traces).
					continue
				case !ok && strings.HasSuffix(n, "_FILE"):
					t.Errorf("%s: %s is neither a variable of the binaries nor the file form of a secret of config.Vars", component, n)
				case !ok:
					t.Errorf("%s: %s is not a variable of the binaries (config.Vars)", component, n)
				case !strings.Contains(v.Binaries, binary) && component != "migrate":
					t.Errorf("%s: %s is read by %s only", component, n, v.Binaries)
				case v.Secret && n == v.Name:
					t.Errorf("%s: the secret %s is given in the environment; give %s_FILE", component, n, n)
				}
			}
			for _, must := range []string{"SECKILL_REDIS_ADDR", "SECKILL_MYSQL_DSN_FILE", "SECKILL_JWT_SECRET_FILE"} {
				if _, ok := env[must]; !ok {
					t.Errorf("%s: %s is not set", component, must)
				}
			}
		}
	}
}

// checkFiles: every file a variable names (<NAME>_FILE of a secret, and the TLS files)
// is a key that a Secret volume mounted in that container projects, readable by the
// pod's user; every key projected is named by a variable; and a Secret the chart makes
// holds every key projected from it. A misspelt key, a path that names no mount, or a
// mount that no variable reads fails here rather than at a pod's start.
func checkFiles(t *testing.T, r rendered) {
	made := map[string]*corev1.Secret{}
	for _, s := range r.secrets {
		made[s.Name] = s
	}
	for component, pod := range r.pods() {
		if component == "nginx" {
			continue
		}
		volumes := map[string]corev1.Volume{}
		for _, v := range pod.Volumes {
			volumes[v.Name] = v
		}
		for _, c := range pod.Containers {
			named := map[string]bool{} // the files the variables name
			for n, path := range envOf(t, c) {
				if !strings.HasSuffix(n, "_FILE") {
					continue
				}
				named[path] = true
				m, found := mountOf(c, filepath.Dir(path))
				v := volumes[m.Name]
				switch {
				case !found:
					t.Errorf("%s: %s=%s, and no volume is mounted at %s", component, n, path, filepath.Dir(path))
				case v.Secret == nil:
					t.Errorf("%s: %s=%s is in volume %s, which is not a Secret", component, n, path, m.Name)
				case !slices.ContainsFunc(v.Secret.Items, func(k corev1.KeyToPath) bool { return k.Path == filepath.Base(path) }):
					t.Errorf("%s: %s=%s, and volume %s (Secret %s) projects no %s (it projects %v)", component, n, path, m.Name, v.Secret.SecretName, filepath.Base(path), v.Secret.Items)
				}
			}
			for _, m := range c.VolumeMounts {
				v := volumes[m.Name]
				if v.Secret == nil {
					continue
				}
				if len(v.Secret.Items) == 0 {
					t.Errorf("%s: volume %s mounts all of Secret %s; project the keys the binaries read (items), so that a missing one stops the pod naming it", component, m.Name, v.Secret.SecretName)
				}
				if !readable(pod, *v.Secret) {
					t.Errorf("%s: the files of volume %s are not readable by the pod's user", component, m.Name)
				}
				for _, k := range v.Secret.Items {
					if path := m.MountPath + "/" + k.Path; !named[path] {
						t.Errorf("%s: volume %s mounts %s (key %s of Secret %s), which no variable names", component, m.Name, path, k.Key, v.Secret.SecretName)
					}
					if s := made[v.Secret.SecretName]; s != nil {
						_, inString := s.StringData[k.Key]
						_, inData := s.Data[k.Key]
						if !inString && !inData {
							t.Errorf("%s: the chart makes Secret %s without the key %s that volume %s projects", component, s.Name, k.Key, m.Name)
						}
					}
				}
			}
		}
	}
}

// mountOf returns c's volume mount at dir.
func mountOf(c corev1.Container, dir string) (corev1.VolumeMount, bool) {
	for _, m := range c.VolumeMounts {
		if m.MountPath == dir {
			return m, true
		}
	}
	return corev1.VolumeMount{}, false
}

// readable reports whether the pod's user reads the files of a Secret volume: they are
// root's and, with an fsGroup, that group's, with the volume's mode (0644 by default).
func readable(pod corev1.PodSpec, s corev1.SecretVolumeSource) bool {
	mode := int32(0o644)
	if s.DefaultMode != nil {
		mode = *s.DefaultMode
	}
	fsGroup := pod.SecurityContext != nil && pod.SecurityContext.FSGroup != nil
	return mode&0o004 != 0 || mode&0o040 != 0 && fsGroup
}

// checkRequired: a values file of ci/ renders what it is there for (required).
func checkRequired(t *testing.T, r rendered) {
	name := filepath.Base(r.valuesFile)
	want, ok := required[name]
	if !ok {
		return
	}
	for component, pod := range r.pods() {
		if component == "nginx" {
			continue
		}
		env := envOf(t, pod.Containers[0])
		for _, n := range want.env {
			if _, ok := env[n]; !ok {
				t.Errorf("%s: %s does not set %s", component, name, n)
			}
		}
	}
	if made := len(r.secrets) > 0; made != want.makesSecret {
		t.Errorf("%s: the chart makes %d Secrets; want the chart to make the Secret: %v", name, len(r.secrets), want.makesSecret)
	}
}

// containerPort returns the port a probe names, by name or number.
func containerPort(t *testing.T, c corev1.Container, p corev1.HTTPGetAction) int32 {
	t.Helper()
	for _, cp := range c.Ports {
		if cp.Name == p.Port.String() || cp.ContainerPort == p.Port.IntVal {
			return cp.ContainerPort
		}
	}
	t.Errorf("container %s: a probe's port %s is not a container port", c.Name, p.Port.String())
	return 0
}

// listenPort is the port of a host:port setting.
func listenPort(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Errorf("%q: %v", addr, err)
	}
	return port
}

// apiRoutes are the API's GET routes.
func apiRoutes(t *testing.T) map[string]bool {
	t.Helper()
	engine, ok := handler.New(handlertest.Services(handlertest.Unserved{}), handler.Options{JWTSecret: strings.Repeat("x", 32)}).Routes().(*gin.Engine)
	if !ok {
		t.Fatal("handler.Routes() is no longer a *gin.Engine; adapt this test to list its routes")
	}
	out := map[string]bool{}
	for _, r := range engine.Routes() {
		if r.Method == "GET" {
			out[r.Path] = true
		}
	}
	return out
}

// duration reads a Go duration setting from env, else its default in config.Vars.
func duration(t *testing.T, env map[string]string, name string) time.Duration {
	t.Helper()
	val, ok := env[name]
	if !ok {
		val = known()[name].Default
	}
	d, err := time.ParseDuration(val)
	if err != nil {
		t.Errorf("%s=%q: %v", name, val, err)
	}
	return d
}

// graceMargin is what a grace period must leave beyond a pod's preStop hook and its
// process's shutdown, for the process to start stopping and to exit
// (docs/deploying.md#choosing-the-timings).
const graceMargin = 5 * time.Second

// nginxShutdown bounds a stopping nginx's wait for the answers in flight: an API
// answers within its server's 15 s write bound (docs/deploying.md).
const nginxShutdown = 15 * time.Second

// checkGrace: Kubernetes kills the pod no sooner than its preStop hook, the process's
// shutdown and graceMargin allow.
func checkGrace(t *testing.T, component string, pod corev1.PodSpec, shutdown time.Duration) {
	t.Helper()
	want := shutdown + graceMargin
	for _, c := range pod.Containers {
		want += preStop(t, component, c)
	}
	grace := pod.TerminationGracePeriodSeconds
	if grace == nil || time.Duration(*grace)*time.Second < want {
		got := "unset"
		if grace != nil {
			got = fmt.Sprint(*grace)
		}
		t.Errorf("%s: terminationGracePeriodSeconds %s is under its preStop hook, its shutdown (%v) and a margin of %v: want at least %v", component, got, shutdown, graceMargin, want)
	}
}

// preStop is how long c's preStop hook waits: a sleep, as an exec of sleep or the
// sleep action.
func preStop(t *testing.T, component string, c corev1.Container) time.Duration {
	t.Helper()
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		return 0
	}
	h := c.Lifecycle.PreStop
	switch {
	case h.Sleep != nil:
		return time.Duration(h.Sleep.Seconds) * time.Second
	case h.Exec != nil && len(h.Exec.Command) == 2 && h.Exec.Command[0] == "sleep":
		if d, err := time.ParseDuration(h.Exec.Command[1] + "s"); err == nil {
			return d
		}
	}
	t.Errorf("%s: a preStop hook this check cannot time: %+v", component, *h)
	return 0
}

// checkAPI: the probes are the router's /healthz and /readyz on the port the API
// listens on, and the pod's grace period covers the shutdown's delay and timeout and a
// margin.
func checkAPI(t *testing.T, r rendered) {
	d := r.deployments["api"]
	c := d.Spec.Template.Spec.Containers[0]
	env := envOf(t, c)
	routes := apiRoutes(t)
	port := listenPort(t, env["SECKILL_HTTP_ADDR"])
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		want := map[string]string{"liveness": "/healthz", "readiness": "/readyz"}[name]
		if p == nil || p.HTTPGet == nil {
			t.Errorf("api: no HTTP %s probe", name)
			continue
		}
		if p.HTTPGet.Path != want || !routes[p.HTTPGet.Path] {
			t.Errorf("api: %s probe GET %s; want %s, a route of the router (served: %v)", name, p.HTTPGet.Path, want, routes[p.HTTPGet.Path])
		}
		if got := fmt.Sprint(containerPort(t, c, *p.HTTPGet)); got != port {
			t.Errorf("api: %s probe on port %s, the API listens on %s", name, got, port)
		}
	}
	// /metrics on a port of its own, which the pods' scrape annotations name.
	metrics := listenPort(t, env["SECKILL_METRICS_ADDR"])
	if metrics == port {
		t.Errorf("api: /metrics on the buyers' port %s", port)
	}
	for _, cp := range c.Ports {
		if cp.Name == "metrics" && fmt.Sprint(cp.ContainerPort) != metrics {
			t.Errorf("api: container port metrics is %d, SECKILL_METRICS_ADDR listens on %s", cp.ContainerPort, metrics)
		}
	}
	for _, pod := range []corev1.PodTemplateSpec{d.Spec.Template, r.deployments["worker"].Spec.Template} {
		a := pod.Annotations
		want := metrics
		if pod.Labels["app.kubernetes.io/component"] == "worker" {
			want = listenPort(t, envOf(t, pod.Spec.Containers[0])["SECKILL_WORKER_METRICS_ADDR"])
		}
		if a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != want || a["prometheus.io/path"] != "/metrics" {
			t.Errorf("%s pods: scrape annotations %v, want /metrics on port %s", pod.Labels["app.kubernetes.io/component"], a, want)
		}
	}
	checkGrace(t, "api", d.Spec.Template.Spec, duration(t, env, "SECKILL_SHUTDOWN_DELAY")+duration(t, env, "SECKILL_SHUTDOWN_TIMEOUT"))
	if p := d.Spec.Template.Spec.Containers[0].ReadinessProbe; p != nil && p.PeriodSeconds*p.FailureThreshold > 3 {
		t.Errorf("api: readiness takes %d s to see a 503; the API says 503 within 3 s of Redis going", p.PeriodSeconds*p.FailureThreshold)
	}
	if s := d.Spec.Strategy.RollingUpdate; s == nil || s.MaxUnavailable == nil || s.MaxUnavailable.IntValue() != 0 {
		t.Errorf("api: a roll must not take a pod down before its replacement is ready (maxUnavailable 0)")
	}
}

// checkWorker: a liveness probe on the metrics address (an HTTP one on a path
// cmd/worker serves, or a TCP one), and a grace period that covers its shutdown's
// timeout and a margin.
func checkWorker(t *testing.T, r rendered) {
	d := r.deployments["worker"]
	c := d.Spec.Template.Spec.Containers[0]
	env := envOf(t, c)
	port := listenPort(t, env["SECKILL_WORKER_METRICS_ADDR"])
	src, err := os.ReadFile(filepath.Join(root(), "cmd", "worker", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if c.LivenessProbe == nil {
		t.Error("worker: no liveness probe")
	}
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		switch {
		case p == nil:
		case p.HTTPGet != nil:
			if !bytes.Contains(src, []byte(`"`+p.HTTPGet.Path+`"`)) {
				t.Errorf("worker: %s probe GET %s, a path cmd/worker does not serve", name, p.HTTPGet.Path)
			}
			if got := fmt.Sprint(containerPort(t, c, *p.HTTPGet)); got != port {
				t.Errorf("worker: %s probe on port %s, the metrics address is on %s", name, got, port)
			}
		case p.TCPSocket != nil:
			if got := fmt.Sprint(containerPort(t, c, corev1.HTTPGetAction{Port: p.TCPSocket.Port})); got != port {
				t.Errorf("worker: %s probe on port %s, the metrics address is on %s", name, got, port)
			}
		default:
			t.Errorf("worker: the %s probe is neither HTTP nor TCP", name)
		}
	}
	checkGrace(t, "worker", d.Spec.Template.Spec, duration(t, env, "SECKILL_SHUTDOWN_TIMEOUT"))
}

// TestNginxInFlight: nginx's bound on purchases in flight is per client address
// (nginx.purchasesInFlight), passed to the front as it is, and a number out of 1..65535
// is refused.
func TestNginxInFlight(t *testing.T) {
	for _, c := range []struct {
		name, values string
		want         string // SECKILL_NGINX_PURCHASES_IN_FLIGHT
		refused      string // or a part of helm's error
	}{
		{"the default", "", "64", ""},
		{"a number of the values'", "nginx: {enabled: true, purchasesInFlight: 200}", "200", ""},
		{"none", "nginx: {enabled: true, purchasesInFlight: 0}", "", "nginx.purchasesInFlight: 0 per client address, want 1 to 65535"},
		{"too many", "nginx: {enabled: true, purchasesInFlight: 70000}", "", "want 1 to 65535"},
	} {
		t.Run(c.name, func(t *testing.T) {
			values := filepath.Join(t.TempDir(), "values.yaml")
			body := c.values
			if !strings.Contains(body, "nginx:") {
				body += "\nnginx: {enabled: true}"
			}
			if err := os.WriteFile(values, []byte(body+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if c.refused != "" {
				out, err := exec.Command(helm(t), "template", "shop", chart(), "-f", values).CombinedOutput()
				if err == nil || !strings.Contains(string(out), c.refused) {
					t.Fatalf("helm template: %v, want it refused with %q:\n%s", err, c.refused, out)
				}
				return
			}
			nginx := render(t, values).deployments["nginx"]
			if nginx == nil {
				t.Fatal("no nginx Deployment")
			}
			if got := envOf(t, nginx.Spec.Template.Spec.Containers[0])["SECKILL_NGINX_PURCHASES_IN_FLIGHT"]; got != c.want {
				t.Errorf("SECKILL_NGINX_PURCHASES_IN_FLIGHT = %q, want %s", got, c.want)
			}
		})
	}
}

// checkPods: the service's containers run as the image's non-root user on a
// read-only root, with requests and a memory limit.
func checkPods(t *testing.T, r rendered) {
	dockerfile, err := os.ReadFile(filepath.Join(root(), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	// distroless' nonroot user is 65532.
	if !bytes.Contains(dockerfile, []byte("distroless/static-debian12:nonroot")) || !bytes.Contains(dockerfile, []byte("USER nonroot:nonroot")) {
		t.Fatal("the Dockerfile's user is no longer distroless' nonroot (65532): adapt the chart's runAsUser and this test")
	}
	check := func(name string, pod corev1.PodSpec, uid int64) {
		psc := pod.SecurityContext
		if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != uid {
			t.Errorf("%s: the pod must run as non-root user %d", name, uid)
		}
		for _, c := range pod.Containers {
			sc := c.SecurityContext
			if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
				sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Errorf("%s: container %s must have a read-only root and no privilege escalation", name, c.Name)
			}
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
				t.Errorf("%s: container %s needs CPU and memory requests and a memory limit", name, c.Name)
			}
		}
	}
	for component, d := range r.deployments {
		uid := int64(65532)
		if component == "nginx" {
			uid = 101
		}
		check(component, d.Spec.Template.Spec, uid)
	}
	for _, j := range r.jobs {
		check("migrate", j.Spec.Template.Spec, 65532)
	}
}

// checkSelectors: each Service, budget, autoscaler and monitor points at pods the chart
// makes, and the entry Service at nginx when it is on.
func checkSelectors(t *testing.T, r rendered) {
	selects := func(sel map[string]string) []string {
		var out []string
		for c, d := range r.deployments {
			match := len(sel) > 0
			for k, v := range sel {
				match = match && d.Spec.Template.Labels[k] == v
			}
			if match {
				out = append(out, c)
			}
		}
		slices.Sort(out)
		return out
	}
	for _, s := range r.services {
		got := selects(s.Spec.Selector)
		if len(got) != 1 {
			t.Errorf("Service %s selects %v, want one component", s.Name, got)
			continue
		}
		pod := r.deployments[got[0]].Spec.Template.Spec.Containers[0]
		for _, p := range s.Spec.Ports {
			found := false
			for _, cp := range pod.Ports {
				found = found || cp.Name == p.TargetPort.String()
			}
			if !found {
				t.Errorf("Service %s: target port %s is not a port of %s", s.Name, p.TargetPort.String(), got[0])
			}
		}
		if !strings.HasSuffix(s.Name, "-api") && !strings.HasSuffix(s.Name, "-worker") {
			want := "api"
			if r.nginxEnabled {
				want = "nginx"
			}
			if got[0] != want {
				t.Errorf("the entry Service %s selects %s, want %s", s.Name, got[0], want)
			}
		}
	}
	for _, p := range r.pdbs {
		if got := selects(p.Spec.Selector.MatchLabels); len(got) != 1 {
			t.Errorf("PodDisruptionBudget %s selects %v", p.Name, got)
		}
	}
	for _, h := range r.hpas {
		if d := r.deployments["api"]; h.Spec.ScaleTargetRef.Name != d.Name || h.Spec.ScaleTargetRef.Kind != "Deployment" {
			t.Errorf("the autoscaler scales %s %s, want the API's Deployment %s", h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name, d.Name)
		}
		if r.deployments["api"].Spec.Replicas != nil {
			t.Error("with the autoscaler on, the API's Deployment must leave replicas to it")
		}
	}
	for _, m := range r.monitors {
		ports := map[string]bool{}
		for _, e := range m.Spec.Endpoints {
			ports[e.Port] = true
			if e.Path != "/metrics" {
				t.Errorf("ServiceMonitor: endpoint %s scrapes %s", e.Port, e.Path)
			}
		}
		if len(ports) != 1 || !ports["metrics"] {
			t.Errorf("ServiceMonitor scrapes ports %v, want metrics alone (the API's and the worker's, never http)", ports)
		}
	}
}

// checkMigration: the migration runs as a hook before install and upgrade.
func checkMigration(t *testing.T, r rendered) {
	if len(r.jobs) != 1 {
		t.Fatalf("%d Jobs, want the migration", len(r.jobs))
	}
	j := r.jobs[0]
	if hook := j.Annotations["helm.sh/hook"]; hook != "pre-install,pre-upgrade" {
		t.Errorf("the migration's hook is %q, want pre-install,pre-upgrade", hook)
	}
	if args := j.Spec.Template.Spec.Containers[0].Args; !slices.Equal(args, []string{"api", "migrate"}) {
		t.Errorf("the migration runs %v, want api migrate", args)
	}
}

// checkShipped: the PrometheusRule is deploy/prometheus/alerts.yml and nginx's
// ConfigMap is deploy/nginx/seckill.conf.template.
func checkShipped(t *testing.T, r rendered) {
	for _, rule := range r.rules {
		b, err := os.ReadFile(filepath.Join(root(), "deploy", "prometheus", "alerts.yml"))
		if err != nil {
			t.Fatal(err)
		}
		var want monitoringv1.PrometheusRuleSpec
		if err := yaml.UnmarshalStrict(b, &want); err != nil {
			t.Fatalf("alerts.yml as a PrometheusRule's spec: %v", err)
		}
		if !reflect.DeepEqual(rule.Spec, want) {
			t.Error("the PrometheusRule differs from deploy/prometheus/alerts.yml")
		}
		if len(want.Groups) == 0 {
			t.Error("no rule group in alerts.yml")
		}
	}
	for _, c := range r.configMaps {
		b, err := os.ReadFile(filepath.Join(root(), "deploy", "nginx", "seckill.conf.template"))
		if err != nil {
			t.Fatal(err)
		}
		if c.Data["seckill.conf.template"] != string(b) {
			t.Errorf("ConfigMap %s differs from deploy/nginx/seckill.conf.template", c.Name)
		}
	}
	if r.nginxEnabled && len(r.configMaps) != 1 {
		t.Errorf("nginx is on with %d ConfigMaps", len(r.configMaps))
	}
	if strings.Contains(r.valuesFile, "cluster") && (len(r.rules) != 1 || len(r.monitors) != 1) {
		t.Errorf("the cluster values turn on the ServiceMonitor and the PrometheusRule: got %d and %d", len(r.monitors), len(r.rules))
	}
}

// TestValuesDocumented: every value of values.yaml has a comment: on the lines above it,
// or above the run of one-line sibling values it belongs to (podLabels, podAnnotations,
// ... under one comment), or it is part of a resources or image block whose key has one.
func TestValuesDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chart(), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	key := regexp.MustCompile(`^( *)(- )?([A-Za-z][A-Za-z0-9]*):(\s|$)`)
	type entry struct {
		indent     int
		name       string
		documented bool
	}
	var stack []entry // the keys enclosing the line, outermost first
	prevDocumented := map[int]bool{}
	comment, checked := false, 0
	for i, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "#"):
			comment = true
			continue
		case trimmed == "":
			comment = false
			prevDocumented = map[int]bool{}
			continue
		}
		m := key.FindStringSubmatch(line)
		if m == nil {
			comment = false
			continue
		}
		indent := len(m[1])
		if len(stack) > 0 && stack[len(stack)-1].indent > indent {
			prevDocumented[indent] = false // a run of siblings is of one-line values
		}
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		inBlock := false
		for _, e := range stack {
			inBlock = inBlock || (e.name == "resources" || e.name == "image") && e.documented
		}
		documented := comment || prevDocumented[indent] || inBlock
		if !documented {
			t.Errorf("values.yaml:%d: %s has no comment", i+1, m[3])
		}
		for k := range prevDocumented {
			if k > indent {
				delete(prevDocumented, k)
			}
		}
		prevDocumented[indent] = documented
		stack = append(stack, entry{indent, m[3], documented})
		comment = false
		checked++
	}
	if checked < 50 {
		t.Fatalf("read %d values in values.yaml", checked)
	}
}
