// Package deploy holds the checks of the files an operator deploys with: the compose
// file, the Prometheus alert rules and the Grafana dashboard. No engine runs here, so
// each file is checked by the tool that reads it, offline.
package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// root is the repository's top directory.
func root(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..")
}

// tool returns the path of a command the set-up installs, and fails the test when it
// is missing: a check that cannot run must not pass.
func tool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is missing: scripts/services.sh up installs it (Debian package %s)", name, pkg)
	}
	return p
}

// TestComposeConfig has docker-compose read docker-compose.yml with each profile, so a
// misspelt key or a broken reference fails here though nothing can start it.
func TestComposeConfig(t *testing.T) {
	compose := tool(t, "docker-compose", "docker-compose")
	for _, profile := range []string{"", "cluster", "monitoring"} {
		t.Run("profile="+profile, func(t *testing.T) {
			args := []string{"-f", filepath.Join(root(t), "docker-compose.yml")}
			if profile != "" {
				args = append(args, "--profile", profile)
			}
			cmd := exec.Command(compose, append(args, "config", "-q")...)
			cmd.Env = append(os.Environ(), "SECKILL_JWT_SECRET=0123456789abcdef0123456789abcdef")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("docker-compose config: %v\n%s", err, out)
			}
		})
	}
}
