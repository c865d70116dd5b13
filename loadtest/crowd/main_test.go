package main

import (
	"testing"

	"seckill/internal/testutil"
)

// TestMain removes the api and worker binaries the audit tests' stacks built.
func TestMain(m *testing.M) { testutil.Main(m) }
