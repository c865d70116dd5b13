// Package chartcheck checks the Helm chart (deploy/helm/seckill) offline: its test runs
// helm lint and helm template with each set of values, decodes every rendered object
// strictly into the Kubernetes API's (and the Prometheus Operator's) types, and holds
// the probes, ports and environment names to the service's router and configuration,
// the files the variables name to the Secret volumes mounted, the grace periods to the
// shutdown's timings, and values.yaml to a comment for every value.
//
// It is a module of its own so that the Kubernetes client types stay out of the
// service's go.mod; make test runs it (cd deploy/helm/chartcheck && go test ./...).
package chartcheck
