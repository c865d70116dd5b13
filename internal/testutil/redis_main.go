package testutil

import (
	"fmt"
	"os"
	"testing"
)

// StartRedisMain starts a redis-server from a package's TestMain, before any
// test exists: for example so that examples with an Output comment run
// against a real server. It exits the test binary with status 1 when the
// server cannot be had, never skipping. Call stop after m.Run.
func StartRedisMain(extraArgs ...string) (s *RedisServer, stop func()) {
	tb := &mainTB{}
	return StartRedis(tb, extraArgs...), tb.cleanup
}

// mainTB is the part of testing.TB that StartRedis and RedisServer use,
// for code that runs outside a test. Other methods are not implemented.
type mainTB struct {
	testing.TB
	cleanups []func()
}

func (m *mainTB) Helper() {}

func (m *mainTB) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "FAIL: "+format+"\n", args...)
	m.cleanup()
	os.Exit(1)
}

func (m *mainTB) TempDir() string {
	dir, err := os.MkdirTemp("", "testutil-redis-")
	if err != nil {
		m.Fatalf("make a temporary directory: %v", err)
	}
	m.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func (m *mainTB) Cleanup(f func()) { m.cleanups = append(m.cleanups, f) }

func (m *mainTB) cleanup() {
	for i := len(m.cleanups) - 1; i >= 0; i-- {
		m.cleanups[i]()
	}
	m.cleanups = nil
}
