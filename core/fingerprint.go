package core

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
)

// Fingerprint is a 128-bit hash of everything the text form of g holds (its name,
// every node's op, param name, type, attributes and inputs, the outputs; not source
// locations), as hex. Structurally equal graphs have equal fingerprints, and it costs a
// fraction of Format, so caches keyed by graph structure use it. The seeds are chosen
// per process: fingerprints are not for storing.
func Fingerprint(g *Graph) string {
	buf := make([]byte, 0, 64*len(g.Nodes)+64)
	buf = appendField(buf, g.Name)
	for _, n := range g.Nodes {
		buf = appendField(buf, n.Op)
		buf = appendField(buf, n.Name)
		buf = appendType(buf, n.Type)
		buf = binary.AppendUvarint(buf, uint64(len(n.Inputs)))
		for _, x := range n.Inputs {
			buf = binary.AppendVarint(buf, int64(x))
		}
		buf = appendAttrs(buf, n.Attrs)
	}
	buf = binary.AppendUvarint(buf, uint64(len(g.Outputs)))
	for _, o := range g.Outputs {
		buf = binary.AppendVarint(buf, int64(o))
	}
	var sum [16]byte
	binary.BigEndian.PutUint64(sum[:8], maphash.Bytes(fingerprintSeeds[0], buf))
	binary.BigEndian.PutUint64(sum[8:], maphash.Bytes(fingerprintSeeds[1], buf))
	return hex.EncodeToString(sum[:])
}

// fingerprintSeeds make the two independent 64-bit halves of a fingerprint.
var fingerprintSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// appendField writes s with its length, so that fields cannot run into each other.
func appendField(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

func appendType(buf []byte, t TensorType) []byte {
	buf = append(buf, byte(t.DType), byte(t.Layout.Kind))
	buf = binary.AppendVarint(buf, int64(t.Layout.Rows))
	buf = binary.AppendVarint(buf, int64(t.Layout.Cols))
	buf = binary.AppendUvarint(buf, uint64(len(t.Shape)))
	for _, d := range t.Shape {
		buf = binary.AppendVarint(buf, int64(d))
	}
	buf = binary.AppendUvarint(buf, uint64(len(t.Dims)))
	for _, d := range t.Dims {
		buf = appendField(buf, d.String())
	}
	return buf
}

// appendAttrs writes the attributes in key order, each value with a tag of its type.
func appendAttrs(buf []byte, a Attrs) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(a)))
	if len(a) == 0 {
		return buf
	}
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		buf = appendField(buf, k)
		switch v := a[k].(type) {
		case bool:
			b := byte(0)
			if v {
				b = 1
			}
			buf = append(buf, 'b', b)
		case int64:
			buf = binary.AppendVarint(append(buf, 'i'), v)
		case int:
			buf = binary.AppendVarint(append(buf, 'i'), int64(v))
		case float64:
			buf = binary.LittleEndian.AppendUint64(append(buf, 'f'), math.Float64bits(v))
		case string:
			buf = appendField(append(buf, 's'), v)
		case []int64:
			buf = binary.AppendUvarint(append(buf, 'I'), uint64(len(v)))
			for _, x := range v {
				buf = binary.AppendVarint(buf, x)
			}
		case []float64:
			buf = binary.AppendUvarint(append(buf, 'F'), uint64(len(v)))
			for _, x := range v {
				buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(x))
			}
		case Dim:
			buf = appendField(append(buf, 'd'), v.String())
		case []Dim:
			buf = binary.AppendUvarint(append(buf, 'D'), uint64(len(v)))
			for _, d := range v {
				buf = appendField(buf, d.String())
			}
		default: // rare kinds: their printed form
			buf = appendField(append(buf, '?'), fmt.Sprintf("%T:%v", v, v))
		}
	}
	return buf
}
