package core

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateOpsDoc = flag.Bool("update", false, "rewrite ../docs/ops.md from the registry")

// docs/ops.md must be what the registry generates, so every op is documented.
func TestOpsDocIsCurrent(t *testing.T) {
	want := OpsMarkdown()
	if *updateOpsDoc {
		require.NoError(t, os.WriteFile("../docs/ops.md", []byte(want), 0o644))
	}
	got, err := os.ReadFile("../docs/ops.md")
	require.NoError(t, err, "run: go test ./core -run TestOpsDoc -update")
	assert.Equal(t, want, string(got), "docs/ops.md is stale; run: go test ./core -run TestOpsDoc -update")
	for _, name := range OpNames() {
		if strings.Contains(name, "test") {
			continue // registered by tests
		}
		assert.Contains(t, want, "| `"+name+"` |")
	}
}
