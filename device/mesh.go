package device

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// A Mesh is a set of simulated chips joined by links in tiers: tier 0 is the innermost
// (the chips of one server), each later tier joins whole groups of the tier before
// (servers over RoCE, server tiers of a SuperPoD). Every rank is a full chip of the
// preset; the mesh adds only what moving bytes between them costs.
type Mesh struct {
	Name  string
	Chip  string // chip preset of every rank
	Tiers []Tier
	// LaunchSeconds is the fixed cost of starting one collective.
	// public: the vendor's performance model charges 10 us per collective launch
	// (msmodeling tensor_cast/device.py).
	LaunchSeconds float64
}

// A Tier is one level of the interconnect: GroupSize units of the tier below (chips for
// tier 0) joined by one kind of link.
type Tier struct {
	Name      string
	GroupSize int
	Link      Link
	// FullMesh: every pair of units has its own link (HCCS inside an A2 server), so the
	// one-step mesh algorithms apply; otherwise each unit has one port into a switch
	// and exchanges with one peer at a time.
	FullMesh bool
}

// A Link is a point-to-point connection as the alpha-beta model sees it.
type Link struct {
	BytesPerSecond float64 // one direction
	LatencySeconds float64 // alpha: fixed cost of one step over this link
	Efficiency     float64 // fraction of BytesPerSecond that collectives achieve
	Source         string
}

// Beta is the link's seconds per byte at its achieved bandwidth.
func (l Link) Beta() float64 { return 1 / (l.BytesPerSecond * l.Efficiency) }

// Size is the number of chips the mesh's tiers hold.
func (m *Mesh) Size() int {
	n := 1
	for _, t := range m.Tiers {
		n *= t.GroupSize
	}
	return n
}

// Links of the public presets (../docs/distributed.md lists them with their sources).
var (
	// HCCS between two chips of an A2 server: 56 GB/s per pair counting both directions,
	// 28 GB/s one way; the vendor's model: 7 links x 28 GB/s = 196 GB/s per chip, 0.5 us,
	// 70% efficiency (msmodeling tensor_cast/device.py; npu-smi topology of an 8 x 910B server).
	linkHCCS = Link{BytesPerSecond: 28e9, LatencySeconds: 0.5e-6, Efficiency: 0.7, Source: "HCCS: 28 GB/s one way per pair, 0.5 us, 70% (vendor model)"}
	// RoCE between A2 servers: one 200GE port per NPU (rail layout), 25 GB/s, 1.5 us, 70%
	// (vendor model).
	linkRoCE = Link{BytesPerSecond: 25e9, LatencySeconds: 1.5e-6, Efficiency: 0.7, Source: "RoCE 200GE: 25 GB/s per NPU, 1.5 us, 70% (vendor model)"}
	// A3: the two dies of a 910C over SIO, 224 GB/s, 0.2 us (CloudMatrix384 paper);
	// efficiency assumed equal to HCCS's 70% (no public figure).
	linkSIO = Link{BytesPerSecond: 224e9, LatencySeconds: 0.2e-6, Efficiency: 0.7, Source: "SIO: 224 GB/s, 0.2 us (CloudMatrix384); 70% assumed"}
	// A3 dies across a server's first-level switch tier: 196 GB/s, 0.5 us (CloudMatrix384);
	// 70% assumed.
	linkUBTier1 = Link{BytesPerSecond: 196e9, LatencySeconds: 0.5e-6, Efficiency: 0.7, Source: "UB tier 1: 196 GB/s, 0.5 us (CloudMatrix384); 70% assumed"}
	// A3 dies across the pod's second switch tier: 196 GB/s, 5.5 us (CloudMatrix384); 70% assumed.
	linkUBTier2 = Link{BytesPerSecond: 196e9, LatencySeconds: 5.5e-6, Efficiency: 0.7, Source: "UB tier 2: 196 GB/s, 5.5 us (CloudMatrix384); 70% assumed"}
)

const collectiveLaunchSeconds = 10e-6 // public: vendor model, 10 us per collective

// MeshPresetNames lists the mesh presets: "a2-node" (8 chips), "a2-nodes:N" (N servers of
// 8), "a3-server" (16 dies) and "a3-pod:N" (N servers of 16 dies; CloudMatrix384 is 48).
func MeshPresetNames() []string {
	return []string{"a2-node", "a2-nodes:N", "a3-server", "a3-pod:N"}
}

// MeshPreset builds the named mesh.
func MeshPreset(name string) (*Mesh, error) {
	base, arg, hasArg := strings.Cut(name, ":")
	count := 0
	if hasArg {
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 || n > 4096 {
			return nil, fmt.Errorf("mesh preset %q: the count after ':' must be an integer from 1 to 4096", name)
		}
		count = n
	}
	a2Node := Tier{Name: "hccs", GroupSize: 8, Link: linkHCCS, FullMesh: true}
	switch {
	case base == "a2-node" && !hasArg:
		return &Mesh{Name: name, Chip: "a2", Tiers: []Tier{a2Node}, LaunchSeconds: collectiveLaunchSeconds}, nil
	case base == "a2-nodes" && hasArg:
		return &Mesh{Name: name, Chip: "a2", Tiers: []Tier{a2Node, {Name: "roce", GroupSize: count, Link: linkRoCE}}, LaunchSeconds: collectiveLaunchSeconds}, nil
	case base == "a3-server" && !hasArg, base == "a3-pod" && hasArg:
		tiers := []Tier{{Name: "sio", GroupSize: 2, Link: linkSIO, FullMesh: true}, {Name: "ub1", GroupSize: 8, Link: linkUBTier1}}
		if hasArg {
			tiers = append(tiers, Tier{Name: "ub2", GroupSize: count, Link: linkUBTier2})
		}
		// The A3's dies are 910C halves; each is simulated as an a2-class chip (assumed:
		// the presets have no 910C die of their own).
		return &Mesh{Name: name, Chip: "a2", Tiers: tiers, LaunchSeconds: collectiveLaunchSeconds}, nil
	}
	return nil, fmt.Errorf("unknown mesh preset %q (known: %s)", name, strings.Join(MeshPresetNames(), ", "))
}

// groupShape is a group of mesh ranks seen as a grid over the tiers it spans: coords[i]
// are rank i's positions, innermost tier first, and dims[j] / tiers[j] the extent and
// tier of each grid axis. A group must fill its grid (every server holds the same number
// of its ranks, and so on), which is what hierarchical collectives need.
type groupShape struct {
	ranks  []int // the group's mesh ranks, ascending (the group order)
	coords [][]int
	dims   []int
	tiers  []Tier
}

// shapeOf places a group of ranks (distinct, in [0, Size())) on the mesh's tiers.
func (m *Mesh) shapeOf(ranks []int) (*groupShape, error) {
	if len(ranks) == 0 {
		return nil, fmt.Errorf("a collective needs at least one rank")
	}
	rs := append([]int(nil), ranks...)
	sort.Ints(rs)
	for i, r := range rs {
		if r < 0 || r >= m.Size() {
			return nil, fmt.Errorf("rank %d is outside mesh %s of %d chips", r, m.Name, m.Size())
		}
		if i > 0 && rs[i-1] == r {
			return nil, fmt.Errorf("rank %d appears twice in the group", r)
		}
	}
	g := &groupShape{ranks: rs, coords: make([][]int, len(rs))}
	span := 1 // chips per unit of the tier below
	for _, t := range m.Tiers {
		// Positions at this tier: the distinct units of the tier below, numbered within
		// each unit of this tier.
		unit := span * t.GroupSize
		pos := map[int]map[int]int{} // unit of this tier -> sub-unit -> position
		for _, r := range rs {
			u, sub := r/unit, r/span
			if pos[u] == nil {
				pos[u] = map[int]int{}
			}
			if _, ok := pos[u][sub]; !ok {
				pos[u][sub] = 0
			}
		}
		extent := -1
		for _, subs := range pos {
			keys := make([]int, 0, len(subs))
			for k := range subs {
				keys = append(keys, k)
			}
			sort.Ints(keys)
			for i, k := range keys {
				subs[k] = i
			}
			if extent >= 0 && extent != len(keys) {
				return nil, fmt.Errorf("group %v is irregular on mesh %s: its %s units hold different numbers of its ranks", rs, m.Name, t.Name)
			}
			extent = len(keys)
		}
		if extent > 1 {
			for i, r := range rs {
				g.coords[i] = append(g.coords[i], pos[r/unit][r/span])
			}
			g.dims = append(g.dims, extent)
			g.tiers = append(g.tiers, t)
		}
		span = unit
	}
	// Every grid point must be a rank (the product of the extents is the group's size).
	n := 1
	for _, d := range g.dims {
		n *= d
	}
	if n != len(rs) {
		return nil, fmt.Errorf("group %v is irregular on mesh %s: its ranks do not form a full grid over the tiers", rs, m.Name)
	}
	return g, nil
}
