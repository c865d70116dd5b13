package testutil

import (
	"os"
	"sync"
	"testing"
	"time"
)

// The package's one shared cluster, started by the first test that wants it and
// stopped after all of them.
var (
	clusterOnce      sync.Once
	cluster          *Cluster
	stopCluster      func()
	clusterStartTook time.Duration
)

func TestMain(m *testing.M) {
	code := m.Run()
	if stopCluster != nil {
		stopCluster()
	}
	os.Exit(code)
}

// sharedCluster returns the package's 3+3 cluster, healthy. A test that kills or moves
// its nodes leaves it healthy again, with all six nodes running.
func sharedCluster(t *testing.T) *Cluster {
	t.Helper()
	clusterOnce.Do(func() {
		start := time.Now()
		cluster, stopCluster = StartClusterMain(ClusterOptions{})
		clusterStartTook = time.Since(start)
	})
	t.Logf("shared cluster started in %v", clusterStartTook.Round(time.Millisecond))
	cluster.WaitHealthy(t, time.Minute)
	return cluster
}
