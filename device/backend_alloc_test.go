package device

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

// streamProgram loads and stores n vec tiles of rows x 128 f32 one after another, so
// each tile is dead before the next is loaded.
func streamProgram(n, rows int) *isa.Program {
	b := newProg("stream", isa.Vector)
	x := b.param("x", dtype.Float32, n*rows*128)
	y := b.param("y", dtype.Float32, n*rows*128)
	for i := range n {
		t := b.tile("t"+string(rune('0'+i)), isa.Vec, dtype.Float32, rows, 128)
		b.op(isa.TLOAD, tl(t), view(x, i*rows*128, rows, 128, 128))
		b.op(isa.TSTORE, view(y, i*rows*128, rows, 128, 128), tl(t))
	}
	return b.p
}

func TestAllocFreshSpaceBeforeReuse(t *testing.T) {
	// Four 4 KB tiles fit the 32 KB UB side by side: next fit keeps them apart, so no
	// false dependency serialises the stream.
	m := compile(t, preset(t, "tiny"), streamProgram(4, 8))
	for i, a := range m.Tiles {
		assert.Equal(t, i*4096, a.Addr, a.Decl.Name)
		assert.Equal(t, 4096, a.Bytes)
		assert.Equal(t, [2]int{2 * i, 2*i + 1}, [2]int{a.First, a.Last})
	}
	assert.Equal(t, 16384, m.HighWater[isa.Vec])
}

func TestAllocReusesDeadTilesWhenFull(t *testing.T) {
	// Three 12 KB tiles do not fit the 32 KB UB together; the third reuses the first's
	// bytes (dead by then), and a WAR flag orders the reuse.
	m := compile(t, preset(t, "tiny"), streamProgram(3, 24))
	require.Equal(t, 0, m.Tiles[0].Addr)
	require.Equal(t, 12288, m.Tiles[1].Addr)
	require.Equal(t, 0, m.Tiles[2].Addr)
	assert.Equal(t, 24576, m.HighWater[isa.Vec])
	assert.Equal(t, 1, countFlags(m)["mte3->mte2"], "the store of t0 must finish before t2 overwrites its bytes:\n%s", m)
	requireFlagsPaired(t, m)
}

func TestAllocLiveTilesNeverOverlap(t *testing.T) {
	b := newProg("live", isa.Vector)
	x := b.param("x", dtype.Float16, 16*16)
	y := b.param("y", dtype.Float16, 16*16)
	t0 := b.tile("t0", isa.Vec, dtype.Float16, 16, 16)
	t1 := b.tile("t1", isa.Vec, dtype.Float16, 16, 16)
	t2 := b.tile("t2", isa.Vec, dtype.Float16, 16, 16)
	b.op(isa.TLOAD, tl(t0), view(x, 0, 16, 16, 16))
	b.op(isa.TLOAD, tl(t1), view(x, 0, 16, 16, 16))
	b.op(isa.TADD, tl(t2), tl(t0), tl(t1))
	b.op(isa.TSTORE, view(y, 0, 16, 16, 16), tl(t2))
	m := compile(t, preset(t, "tiny"), b.p)
	for i := range m.Tiles {
		for j := i + 1; j < len(m.Tiles); j++ {
			a, c := m.Tiles[i], m.Tiles[j]
			assert.False(t, a.Addr < c.Addr+c.Bytes && c.Addr < a.Addr+a.Bytes, "%s and %s overlap", a.Decl.Name, c.Decl.Name)
		}
	}
}

func TestAllocAlignment(t *testing.T) {
	// 1x16 f16 mat tiles are 32 bytes, L1's alignment; 16x16 f16 left tiles are 512
	// bytes, L0A's. An Acc tile of 16x16 f32 is 1024 bytes and L0C aligns to 64.
	b := newProg("align", isa.Cube)
	a := b.param("a", dtype.Float16, 16*16)
	m1 := b.tile("m1", isa.Mat, dtype.Float16, 1, 16)
	m2 := b.tile("m2", isa.Mat, dtype.Float16, 1, 16)
	m3 := b.tile("m3", isa.Mat, dtype.Float16, 16, 16)
	l1 := b.tile("l1", isa.Left, dtype.Float16, 16, 16)
	l2 := b.tile("l2", isa.Left, dtype.Float16, 16, 16)
	b.op(isa.TLOAD, tl(m1), view(a, 0, 1, 16, 16))
	b.op(isa.TLOAD, tl(m2), view(a, 0, 1, 16, 16))
	b.op(isa.TLOAD, tl(m3), view(a, 0, 16, 16, 16))
	b.op(isa.TMOV, tl(l1), tl(m3))
	b.op(isa.TMOV, tl(l2), tl(m3))
	m := compile(t, preset(t, "a2"), b.p)
	assert.Equal(t, 0, m.Tiles[m1].Addr)
	assert.Equal(t, 32, m.Tiles[m2].Addr, "L1 aligns to 32 bytes")
	assert.Equal(t, 64, m.Tiles[m3].Addr)
	assert.Equal(t, 0, m.Tiles[l1].Addr)
	assert.Equal(t, 512, m.Tiles[l2].Addr, "L0A aligns to 512 bytes")
}

func TestAllocUnusedTile(t *testing.T) {
	b := newProg("unused", isa.Vector)
	x := b.param("x", dtype.Float32, 64)
	b.tile("never", isa.Vec, dtype.Float32, 8, 8)
	used := b.tile("used", isa.Vec, dtype.Float32, 8, 8)
	b.op(isa.TLOAD, tl(used), view(x, 0, 8, 8, 8))
	m := compile(t, preset(t, "tiny"), b.p)
	assert.Equal(t, -1, m.Tiles[0].Addr)
	assert.Equal(t, 0, m.Tiles[used].Addr)
	assert.Contains(t, m.String(), "never vec f32[8x8] unused")
}

func TestAllocOverCapacity(t *testing.T) {
	// 128 x 128 f32 is 64 KB; tiny's UB holds 32 KB.
	b := newProg("big", isa.Vector)
	x := b.param("x", dtype.Float32, 128*128)
	big := b.tile("huge_tile", isa.Vec, dtype.Float32, 128, 128)
	b.op(isa.TLOAD, tl(big), view(x, 0, 128, 128, 128))
	_, err := Compile(preset(t, "tiny"), b.p)
	require.Error(t, err)
	var ce *CompileError
	require.ErrorAs(t, err, &ce)
	for _, want := range []string{"huge_tile", "vec", "65536 bytes", "32768"} {
		assert.Contains(t, err.Error(), want)
	}
	// The same program fits the a2's 192 KB UB.
	_, err = Compile(preset(t, "a2"), b.p)
	require.NoError(t, err)
}

func TestAllocOverCapacityNamesLiveTiles(t *testing.T) {
	b := newProg("crowded", isa.Vector)
	x := b.param("x", dtype.Float32, 64*64)
	t0 := b.tile("first", isa.Vec, dtype.Float32, 64, 64) // 16 KB
	t1 := b.tile("second", isa.Vec, dtype.Float32, 64, 64)
	t2 := b.tile("third", isa.Vec, dtype.Float32, 64, 64)
	b.op(isa.TLOAD, tl(t0), view(x, 0, 64, 64, 64))
	b.op(isa.TLOAD, tl(t1), view(x, 0, 64, 64, 64))
	b.op(isa.TADD, tl(t2), tl(t0), tl(t1))
	_, err := Compile(preset(t, "tiny"), b.p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "third")
	assert.Contains(t, err.Error(), "first (16384 B), second (16384 B)")
}
