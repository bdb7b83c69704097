package main

/*
#include <stdint.h>
#include <stdlib.h>
*/
import "C"

import (
	"encoding/json"
	"errors"
	"unsafe"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
	"pypto/internal/checked"
	"pypto/session"
)

// Exports for multi-chip meshes and their collectives. A collective crosses as JSON
// {mesh, kind, op, algorithm, root, dtype (code), count, ranks} with one host buffer per
// rank for its input and one for its output, each of the size the collective gives it.

// pypto_mesh_json describes a mesh preset: {name, chip, clock_hz, size, launch_seconds,
// reduce_seconds_per_byte, tiers:
// [{name, group_size, full_mesh, bytes_per_second, latency_seconds, efficiency, source}]}.
//
//export pypto_mesh_json
func pypto_mesh_json(name *C.char, out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error {
		m, err := device.MeshPreset(goString(name))
		if err != nil {
			return core.Errorf(core.ValueError, "%v", err)
		}
		type tier struct {
			Name      string  `json:"name"`
			GroupSize int     `json:"group_size"`
			FullMesh  bool    `json:"full_mesh"`
			BPS       float64 `json:"bytes_per_second"`
			Latency   float64 `json:"latency_seconds"`
			Eff       float64 `json:"efficiency"`
			Source    string  `json:"source"`
		}
		chip, err := device.Preset(m.Chip)
		if err != nil {
			return err
		}
		d := struct {
			Name    string  `json:"name"`
			Chip    string  `json:"chip"`
			ClockHz float64 `json:"clock_hz"` // the chip's, for the cycles of a mesh run
			Size    int     `json:"size"`
			Launch  float64 `json:"launch_seconds"`
			Gamma   float64 `json:"reduce_seconds_per_byte"`
			Tiers   []tier  `json:"tiers"`
		}{Name: m.Name, Chip: m.Chip, ClockHz: chip.ClockHz, Size: m.Size(), Launch: m.LaunchSeconds, Gamma: m.ReduceGamma()}
		for _, t := range m.Tiers {
			d.Tiers = append(d.Tiers, tier{t.Name, t.GroupSize, t.FullMesh, t.Link.BytesPerSecond, t.Link.LatencySeconds, t.Link.Efficiency, t.Link.Source})
		}
		return putString(out, n, mustJSON(d))
	})
}

type collectiveSpec struct {
	Mesh      string `json:"mesh"`
	Kind      string `json:"kind"`
	Op        string `json:"op"`
	Algorithm string `json:"algorithm"`
	Root      int    `json:"root"`
	DType     int    `json:"dtype"`
	Count     int    `json:"count"`
	Ranks     []int  `json:"ranks"`
}

// pypto_collective runs a collective over nbuf ranks: ins[i] and outs[i] are rank i's
// input and output buffers (outs may be null to compute the timing only, and then ins
// too), and the timing comes back as JSON (device.CollectiveTiming).
//
//export pypto_collective
func pypto_collective(specJSON *C.char, ins *unsafe.Pointer, outs *unsafe.Pointer, nbuf C.int32_t, out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error {
		var s collectiveSpec
		if err := json.Unmarshal([]byte(goString(specJSON)), &s); err != nil {
			return core.Errorf(core.ValueError, "collective: bad description: %v", err)
		}
		m, err := device.MeshPreset(s.Mesh)
		if err != nil {
			return core.Errorf(core.ValueError, "%v", err)
		}
		d := dtype.DType(s.DType)
		c := device.Collective{Kind: s.Kind, Op: s.Op, Algorithm: s.Algorithm, Root: s.Root, DType: d, Count: s.Count, Ranks: s.Ranks}
		if int(nbuf) != len(s.Ranks) {
			return core.Errorf(core.ValueError, "collective: %d buffers for %d ranks", int(nbuf), len(s.Ranks))
		}
		if !d.Valid() || s.Count < 0 {
			return core.Errorf(core.ValueError, "collective: invalid dtype %d or count %d", s.DType, s.Count)
		}
		inBytes, ok := checked.Mul(s.Count, d.Size())
		if !ok {
			return core.Errorf(core.ValueError, "collective: %d elements overflow a size", s.Count)
		}
		var inputs [][]byte
		if ins != nil && outs != nil {
			inPtrs := unsafe.Slice(ins, int(nbuf))
			inputs = make([][]byte, nbuf)
			for i, p := range inPtrs {
				if p == nil && inBytes > 0 {
					return core.Errorf(core.ValueError, "collective: null input buffer of rank %d", s.Ranks[i])
				}
				inputs[i] = unsafe.Slice((*byte)(p), inBytes)
			}
		}
		results, timing, err := m.RunCollective(c, inputs)
		if err != nil {
			var le *checked.LimitError
			if errors.As(err, &le) {
				return core.MemoryErrorOf(err)
			}
			return core.Errorf(core.ValueError, "%v", err)
		}
		if inputs != nil {
			outPtrs := unsafe.Slice(outs, int(nbuf))
			for i, r := range results {
				if len(r) > 0 {
					// The caller sized each output for this collective (see the Python side).
					copy(unsafe.Slice((*byte)(outPtrs[i]), len(r)), r)
				}
			}
		}
		return putString(out, n, mustJSON(timing))
	})
}

// pypto_realize_stats realises a tensor like pypto_realize and gives the statistics of
// the run this call made as JSON (pypto_last_stats_json's form), or "null" when the
// tensor was already computed: a rank's thread learns what its own work cost.
//
//export pypto_realize_stats
func pypto_realize_stats(h C.uintptr_t, out **C.char, n *C.size_t) C.uintptr_t {
	return status(func() error {
		t, err := lookup[*session.Tensor](uintptr(h), "tensor")
		if err != nil {
			return err
		}
		st, ran, err := session.Default().RealizeStats(t)
		if err != nil {
			return err
		}
		return putString(out, n, statsJSON(st, ran))
	})
}
