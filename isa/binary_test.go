package isa

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func allTestPrograms(t testing.TB) []*Program {
	files, err := filepath.Glob("testdata/*.pto")
	require.NoError(t, err)
	golden, err := filepath.Glob("testdata/golden/*.pto")
	require.NoError(t, err)
	var ps []*Program
	for _, f := range append(files, golden...) {
		p, err := ParseFile(f)
		require.NoError(t, err, f)
		ps = append(ps, p)
	}
	return ps
}

// Every testdata program survives encode/decode deep-equal, and its text is unchanged.
func TestBinaryRoundTrip(t *testing.T) {
	for _, p := range allTestPrograms(t) {
		data := Encode(p)
		got, err := Decode(data)
		require.NoError(t, err, p.Name)
		assert.Equal(t, p, got, p.Name)
		assert.Equal(t, Format(p), Format(got), p.Name)

		var q Program
		require.NoError(t, q.UnmarshalBinary(data))
		again, err := q.MarshalBinary()
		require.NoError(t, err)
		assert.Equal(t, data, again, "encoding is deterministic")
	}
}

// Programs the text cannot write (invalid ones, odd immediates) round-trip too.
func TestBinaryRoundTripMalformed(t *testing.T) {
	p := &Program{
		Name:   "",
		Core:   CoreKind(9),
		Params: []Param{{Name: "a", DType: 77, Elems: -5}},
		Regs:   []RegDecl{{Name: "r"}, {Name: ""}},
		Tiles:  []TileDecl{{Name: "t", Loc: 42, Rows: -1, Cols: 1 << 40, ValidRows: 3, ValidRowsReg: 2, ValidColsReg: -7, Layout: 200}},
		Body: []Instr{
			{Op: 999, Mode: 250, Args: []Operand{{Kind: KindInvalid}, {Kind: KindScalar}, {Kind: 77}}},
			{Op: TLOAD, Args: []Operand{TileOp(-3), GMOp(GMView{Param: 5, Offset: -9, Rows: 1 << 62, Cols: -1, RowStride: 3, ColStride: -4, OffsetReg: 1, RowsReg: -2, ColsReg: 9})}},
			{Op: SADD, Args: []Operand{RegOp(7), ImmOp(-0.0), PipeOp(200)}},
		},
	}
	got, err := Decode(Encode(p))
	require.NoError(t, err)
	assert.Equal(t, p, got)
}

func TestBinaryHeader(t *testing.T) {
	p := &Program{Name: "k", Core: Vector}
	data := Encode(p)
	assert.Equal(t, []byte("PTOB"), data[:4])
	assert.Equal(t, uint16(BinaryVersion), binary.LittleEndian.Uint16(data[4:]))
	n := binary.LittleEndian.Uint32(data[6:])
	assert.Equal(t, []byte{1, 'k', byte(Vector), 0, 0, 0, 0}, data[10:10+n])
	assert.Equal(t, crc32.ChecksumIEEE(data[10:10+n]), binary.LittleEndian.Uint32(data[10+n:]))
	assert.Len(t, data, 10+int(n)+4)
}

func TestDecodeErrors(t *testing.T) {
	good := Encode(&Program{Name: "k", Core: Vector, Params: []Param{{Name: "x", DType: 1, Elems: 4}}})
	with := func(edit func(b []byte) []byte) []byte { return edit(append([]byte(nil), good...)) }
	// reseal recomputes the checksum, so that a corrupt payload reaches the decoder.
	reseal := func(b []byte) []byte {
		n := binary.LittleEndian.Uint32(b[6:])
		binary.LittleEndian.PutUint32(b[10+n:], crc32.ChecksumIEEE(b[10:10+n]))
		return b
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "pto binary: at byte 0: truncated header: 0 bytes, want 10"},
		{"short header", good[:7], "pto binary: at byte 7: truncated header: 7 bytes, want 10"},
		{"text", []byte("kernel k vector\nend\n"), `pto binary: at byte 0: not a PTO binary (magic "kern", want "PTOB")`},
		{"future version", with(func(b []byte) []byte { b[4] = 2; return b }), "pto binary: at byte 4: unsupported format version 2 (this decoder reads version 1)"},
		{"truncated payload", good[:len(good)-6], "pto binary: at byte 19: truncated: the header announces 11 payload bytes plus a 4-byte checksum, the input has 9 after the header"},
		{"trailing bytes", append(append([]byte(nil), good...), 0, 0), "pto binary: at byte 25: 2 bytes after the checksum"},
		{"flipped bit", with(func(b []byte) []byte { b[12] ^= 4; return b }), "checksum mismatch"},
		{"huge count", with(func(b []byte) []byte { b[13] = 100; return reseal(b) }),
			"pto binary: at byte 13: param count 100 exceeds what the remaining 7 bytes can hold"},
		{"varint overflow", with(func(b []byte) []byte {
			b = append(b[:13], 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0, 0, 0)
			binary.LittleEndian.PutUint32(b[6:], uint32(len(b)-14))
			return reseal(b)
		}), "pto binary: at byte 13: param count overflows 64 bits"},
		{"payload cut short", with(func(b []byte) []byte {
			b = append(b[:17], 0, 0, 0, 0) // name "x" and its dtype, then nothing
			binary.LittleEndian.PutUint32(b[6:], 7)
			return reseal(b)
		}), "pto binary: at byte 17: payload ends inside param elements"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Decode(c.data)
			require.Error(t, err)
			assert.Nil(t, p)
			var de *DecodeError
			require.ErrorAs(t, err, &de)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// FuzzDecode: Decode never panics, and what it accepts encodes to bytes that decode
// to the same program.
func FuzzDecode(f *testing.F) {
	for _, p := range allTestPrograms(f)[:40] {
		f.Add(Encode(p))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Decode(data)
		if err != nil {
			if _, ok := err.(*DecodeError); !ok {
				t.Fatalf("Decode error is not a *DecodeError: %#v", err)
			}
			return
		}
		again, err := Decode(Encode(p))
		if err != nil {
			t.Fatalf("re-encoding does not decode: %v", err)
		}
		assertSameProgram(t, p, again)
		_ = Verify(p, func(Location) int { return 1 << 20 }) // must not panic either
		_ = Format(p)
		interpretIfSmall(p)
	})
}

// The seed corpus of FuzzDecode in testdata/fuzz holds encodings too, so that `go test`
// alone (without -fuzz) runs the decoder over them.
func TestDecodeCorpusExists(t *testing.T) {
	files, err := filepath.Glob("testdata/fuzz/FuzzDecode/*")
	require.NoError(t, err)
	assert.NotEmpty(t, files)
	for _, f := range files {
		_, err := os.ReadFile(f)
		require.NoError(t, err)
	}
}
