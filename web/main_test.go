package web_test

import (
	"testing"

	"seckill/internal/testutil"
)

// TestMain removes the api and worker binaries the browser tests' stacks built.
func TestMain(m *testing.M) { testutil.Main(m) }
