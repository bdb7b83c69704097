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
	if *updateOpsDoc { // the Python functions' part after the marker stays
		old, _ := os.ReadFile("../docs/ops.md")
		_, python, _ := strings.Cut(string(old), OpsDocPythonMarker)
		require.NoError(t, os.WriteFile("../docs/ops.md", []byte(want+python), 0o644))
	}
	got, err := os.ReadFile("../docs/ops.md")
	require.NoError(t, err, "run: go test ./core -run TestOpsDoc -update")
	registry, _, _ := strings.Cut(string(got), OpsDocPythonMarker)
	assert.Equal(t, want, registry+OpsDocPythonMarker, "docs/ops.md is stale; run: go test ./core -run TestOpsDoc -update")
	for _, name := range OpNames() {
		if strings.Contains(name, "test") {
			continue // registered by tests
		}
		assert.Contains(t, want, "| `"+name+"` |")
	}
}
