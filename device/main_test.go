package device

import (
	"os"
	"testing"
)

// TestMain runs the package's tests with every timing cache hit checked against a
// fresh timing loop (sim_timing_cache.go): a timing input the cache's key misses
// fails the test that meets it.
func TestMain(m *testing.M) {
	checkTimingCache = true
	os.Exit(m.Run())
}
