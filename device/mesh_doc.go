package device

import (
	"fmt"
	"strings"
)

// MeshPresetTable is the Markdown table of the mesh presets' tiers, which
// docs/distributed.md carries (TestDistributedDocIsCurrent keeps it current).
func MeshPresetTable() string {
	var b strings.Builder
	b.WriteString("| preset | tier | units per group | topology | GB/s one way | latency us | efficiency | source |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, name := range []string{"a2-node", "a2-nodes:2", "a3-server", "a3-pod:48"} {
		m, err := MeshPreset(name)
		if err != nil {
			panic(err) // the names above are presets
		}
		for _, t := range m.Tiers {
			topo := "switched (one port per unit)"
			if t.FullMesh {
				topo = "full mesh"
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %.4g | %.4g | %.4g | %s |\n", name, t.Name, t.GroupSize, topo,
				t.Link.BytesPerSecond/1e9, t.Link.LatencySeconds*1e6, t.Link.Efficiency, t.Link.Source)
		}
	}
	return b.String()
}
