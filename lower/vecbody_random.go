package lower

import (
	"pypto/core"
	"pypto/dtype"
	"pypto/isa"
)

// random_uniform on the vector unit: Philox-4x32-10 (core.Philox4x32) in int32
// instructions, one counter per element (its row-major index), so that every chip and
// every tiling computes the same bits as the reference. The 32 x 32 -> 64-bit products
// are built from 16-bit halves, each partial product below 2**32, so that every
// intermediate is exact before it wraps to 32 bits; shifts right are arithmetic, so a
// logical shift is a shift and a mask.

// flatIndex writes each element's row-major index in the iteration space into an int32
// tile: column index (a sequence along a row), plus row index times the row length (the
// row sequence made in fp32 on a tile 8 wide, as iotaBody does), plus the outer index's
// offset.
func (b *vecBody) flatIndex() int {
	n := len(b.space)
	rows, cols := 1, 1
	if n >= 1 {
		cols = b.space[n-1]
	}
	if n >= 2 {
		rows = b.space[n-2]
	}
	col := b.tile("ph_col", dtype.Int32, 1, b.tc)
	rowF := b.tile("ph_rowf", dtype.Float32, b.tr, 8)
	row := b.tile("ph_row", dtype.Int32, b.tr, 8)
	flat, t := b.i32("ph_flat"), b.i32("ph_t0")
	b.emit(isa.TCI, isa.ModeNone, col, float64(b.c0), 1.0)
	b.emit(isa.TCOLEXPAND, isa.ModeNone, flat, col)
	b.emit(isa.TCI, isa.ModeNone, rowF, float64(b.r0), 1.0/8)
	b.emit(isa.TCVT, isa.ModeNone, row, rowF)
	b.emit(isa.TROWEXPAND, isa.ModeNone, t, row)
	b.emit(isa.TMULS, isa.ModeNone, t, t, float64(cols))
	b.emit(isa.TADD, isa.ModeNone, flat, flat, t)
	b.emit(isa.TADDS, isa.ModeNone, flat, flat, float64(b.o*rows*cols))
	return flat
}

// imm32 is a 32-bit word as the int32 immediate with its bits.
func imm32(w uint32) float64 { return float64(int32(w)) }

// lowHalf writes w & 0xFFFF, highHalf (w >>> 16), into dst.
func (b *vecBody) lowHalf(dst, w int) { b.emit(isa.TANDS, isa.ModeNone, dst, w, 65535.0) }
func (b *vecBody) highHalf(dst, w int) {
	b.emit(isa.TSHRS, isa.ModeNone, dst, w, 16.0)
	b.emit(isa.TANDS, isa.ModeNone, dst, dst, 65535.0)
}

// mulHiLo writes the high and low 32 bits of the unsigned product a * m into hi and lo:
// with a = ah*2**16 + al and m likewise, lo = al*ml + ((al*mh + ah*ml) << 16) and
// hi = ah*mh + (al*mh >>> 16) + (ah*ml >>> 16) + the carry out of the low word's
// middle, (al*ml >>> 16) + (al*mh & 0xFFFF) + (ah*ml & 0xFFFF), shifted down 16.
func (b *vecBody) mulHiLo(hi, lo, a int, m uint32) {
	ml, mh := float64(m&0xFFFF), float64(m>>16)
	al, ah, ll, lh, hl, t, u := b.i32("ph_al"), b.i32("ph_ah"), b.i32("ph_ll"), b.i32("ph_lh"), b.i32("ph_hl"), b.i32("ph_t"), b.i32("ph_u")
	b.lowHalf(al, a)
	b.highHalf(ah, a)
	b.emit(isa.TMULS, isa.ModeNone, ll, al, ml)
	b.emit(isa.TMULS, isa.ModeNone, lh, al, mh)
	b.emit(isa.TMULS, isa.ModeNone, hl, ah, ml)
	b.emit(isa.TMULS, isa.ModeNone, hi, ah, mh)
	// the carry of the middle column
	b.highHalf(t, ll)
	b.lowHalf(u, lh)
	b.emit(isa.TADD, isa.ModeNone, t, t, u)
	b.lowHalf(u, hl)
	b.emit(isa.TADD, isa.ModeNone, t, t, u)
	b.highHalf(t, t)
	b.emit(isa.TADD, isa.ModeNone, hi, hi, t)
	b.highHalf(u, lh)
	b.emit(isa.TADD, isa.ModeNone, hi, hi, u)
	b.highHalf(u, hl)
	b.emit(isa.TADD, isa.ModeNone, hi, hi, u)
	// the low word
	b.emit(isa.TADD, isa.ModeNone, t, lh, hl)
	b.emit(isa.TSHLS, isa.ModeNone, t, t, 16.0)
	b.emit(isa.TADD, isa.ModeNone, lo, ll, t)
}

// randomUniformBody: the counter (index, 0, 0, 0), ten rounds of
// (c0, c1, c2, c3) <- (hi(M1*c2) ^ c1 ^ k0, lo(M1*c2), hi(M0*c0) ^ c3 ^ k1, lo(M0*c0))
// with the key bumped between rounds (the key schedule is known when compiling: the
// keys are immediates), then word 0's top 24 bits times 2**-24.
func randomUniformBody(b *vecBody, dst int, _ []int) {
	seed, _ := b.attrs["seed"].(int64)
	key := core.PhiloxKey(seed)
	c0, c2 := b.flatIndex(), b.i32("ph_c2")
	odd := [2]int{b.i32("ph_c1"), b.i32("ph_c3")}   // c1, c3 of this round
	spare := [2]int{b.i32("ph_n1"), b.i32("ph_n3")} // their next values
	hi0, hi1 := b.i32("ph_hi0"), b.i32("ph_hi1")
	for _, t := range []int{c2, odd[0], odd[1]} {
		b.emit(isa.TEXPANDS, isa.ModeNone, t, 0.0)
	}
	for r := 0; r < core.PhiloxRounds; r++ {
		b.mulHiLo(hi0, spare[1], c0, core.PhiloxM0)
		b.mulHiLo(hi1, spare[0], c2, core.PhiloxM1)
		b.emit(isa.TXOR, isa.ModeNone, c0, hi1, odd[0])
		b.emit(isa.TXORS, isa.ModeNone, c0, c0, imm32(key[0]))
		b.emit(isa.TXOR, isa.ModeNone, c2, hi0, odd[1])
		b.emit(isa.TXORS, isa.ModeNone, c2, c2, imm32(key[1]))
		odd, spare = spare, odd
		key[0] += core.PhiloxW0
		key[1] += core.PhiloxW1
	}
	top := b.i32("ph_top")
	f := b.f32("ph_u24")
	b.emit(isa.TSHRS, isa.ModeNone, top, c0, 8.0)
	b.emit(isa.TANDS, isa.ModeNone, top, top, float64(1<<24-1))
	b.emit(isa.TCVT, isa.ModeNone, f, top)
	b.emit(isa.TMULS, isa.ModeNone, dst, f, 1.0/(1<<24))
}

func init() {
	lowerings["random_uniform"] = lowering{kind: TileElementwise, core: isa.Vector, body: randomUniformBody, extraLive: scratch(9),
		uses: []isa.Opcode{isa.TCI, isa.TCOLEXPAND, isa.TROWEXPAND, isa.TCVT, isa.TMULS, isa.TADD, isa.TADDS, isa.TANDS, isa.TSHRS,
			isa.TSHLS, isa.TXOR, isa.TXORS, isa.TEXPANDS}}
}
