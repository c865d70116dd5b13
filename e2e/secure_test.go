package e2e

import (
	"testing"

	"seckill/internal/testutil"
)

// The main scenarios again, unchanged, with every Redis server, Sentinel and Cluster
// TLS-only with client certificates, the default user off, and the service logged in
// as a user with only config.RedisACL (Sentinels: config.RedisSentinelACL). Each server's
// ACL LOG must be empty at the end: a command, key or channel the rule lacks fails the
// scenario that needed it.
func TestScenariosAsRestrictedUserOverTLS(t *testing.T) {
	for _, sc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"purchases and the worker", TestFlashCrowd},
		{"a worker killed", TestWorkerKilledMidCrowd},
		{"pay windows and expiry", TestConfirmationsRaceThePayWindow},
		{"group-buy", TestGroupBuyCrowd},
		{"waiting room", TestLineLotteryOverTwoAPIs},
		{"rebuild", TestRedisFlushedMidSale},
		{"webhooks", TestWebhooksFromRealProcesses},
		{"a cluster master killed", TestClusterMasterKilledMidCrowd},
		{"a Sentinel failover", TestSentinelMasterKilledMidCrowd},
	} {
		t.Run(sc.name, func(t *testing.T) {
			testutil.SecureRedis(t)
			sc.run(t)
		})
	}
}
