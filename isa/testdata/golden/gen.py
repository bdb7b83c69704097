#!/usr/bin/env python3
"""Generates the golden cases of isa/interp_golden_test.go: for each case a PTO program
(<case>.pto) and a .npz with the input of every param that has one (key: the param's
name), the expected GM contents of output params (want_<param>) or final tile values
(tile_<tile>), and the tolerance in units in the last place of the output dtype (ulp;
0 means exact). Expected values come from numpy, computed in float64 and rounded once
to the destination dtype, as the reference semantics define; float sums and products of
the reductions follow the vector unit's fp32 order instead (lane_reduce, col_reduce).

Run from the repository root:  python3 isa/testdata/golden/gen.py
"""
import os
import numpy as np

OUT = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20240607)
CASES = []

# --- dtypes -------------------------------------------------------------------------

def bf16(x):
    """Round float64 values to bfloat16 (nearest even), returned as float32."""
    f = np.asarray(x, dtype=np.float32)
    b = f.view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16 << 16
    return (b.astype(np.uint32)).view(np.float32)

INT = {'i8': (np.int8, 8), 'i32': (np.int32, 32)}

def rnd(x, dt):
    """x (float64 or int64 numpy values) as dtype dt stores it, in a numpy array of the
    storage dtype used in the .npz (float32 for every float dtype)."""
    x = np.asarray(x)
    if dt == 'f32':
        return x.astype(np.float32)
    if dt == 'f16':
        return x.astype(np.float16).astype(np.float32)
    if dt == 'bf16':
        return bf16(x.astype(np.float32))
    if dt == 'bool':
        return (x != 0).astype(np.int8)
    t, bits = INT[dt]
    v = np.trunc(x.astype(np.float64)) if x.dtype.kind == 'f' else x
    v = np.asarray(v).astype(np.int64) if x.dtype.kind != 'f' else np.nan_to_num(v).astype(np.int64)
    return ((v + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))).astype(t)

def sample(dt, shape, lo=-4, hi=4):
    if dt in INT:
        return rnd(rng.integers(lo, hi, size=shape), dt)
    return rnd(rng.uniform(lo, hi, size=shape), dt)

# --- program text -------------------------------------------------------------------

class Case:
    def __init__(self, name, core='vector', ulp=0):
        self.name, self.core, self.ulp = name, core, ulp
        self.params, self.tiles, self.body, self.arrays = [], [], [], {}

    def param(self, name, dt, n, data=None):
        self.params.append(f'param %{name}: {dt}[{n}]')
        if data is not None:
            self.arrays[name] = np.ascontiguousarray(data).reshape(-1)
        return self

    def tile(self, name, loc, dt, r, c, extra=''):
        self.tiles.append(f'tile %{name}: {loc} {dt}[{r}x{c}]' + (' ' + extra if extra else ''))
        return self

    def op(self, line):
        self.body.append('  ' + line)
        return self

    def want(self, param, data):
        self.arrays['want_' + param] = np.ascontiguousarray(data).reshape(-1)
        return self

    def want_tile(self, tile, data):
        self.arrays['tile_' + tile] = np.ascontiguousarray(data).reshape(-1)
        return self

    def write(self):
        text = '\n'.join([f'kernel {self.name} {self.core}'] + self.params + self.tiles + self.body + ['end', ''])
        with open(os.path.join(OUT, self.name + '.pto'), 'w') as f:
            f.write(text)
        arrays = dict(self.arrays)
        arrays['ulp'] = np.array([self.ulp], dtype=np.int32)
        np.savez(os.path.join(OUT, self.name + '.npz'), **arrays)
        CASES.append(self.name)

R, C = 4, 32
N = R * C
FULL = f'[0; {R}x{C}; {C},1]'

def vec_case(name, dt, inputs, op_line, out_dt=None, ulp=0, out_shape=(R, C), tiles_extra=None):
    """A vector program: load each input into a 4x32 tile, run op_line, store %o."""
    out_dt = out_dt or dt
    c = Case(name, ulp=ulp)
    for i, (pname, data) in enumerate(inputs):
        d = dt if not isinstance(data, tuple) else data[0]
        arr = data if not isinstance(data, tuple) else data[1]
        c.param(pname, d, arr.size, arr)
    orows, ocols = out_shape
    c.param('out', out_dt, orows * ocols)
    for pname, data in inputs:
        d = dt if not isinstance(data, tuple) else data[0]
        arr = data if not isinstance(data, tuple) else data[1]
        r, cc = arr.shape
        c.tile('t' + pname, 'vec', d, r, cc)
    c.tile('to', 'vec', out_dt, orows, ocols, (tiles_extra or ''))
    for pname, data in inputs:
        arr = data if not isinstance(data, tuple) else data[1]
        r, cc = arr.shape
        c.op(f'tload %t{pname}, %{pname}[0; {r}x{cc}; {cc},1]')
    c.op(op_line)
    c.op(f'tstore %out[0; {orows}x{ocols}; {ocols},1], %to')
    return c

def wrap_int(v, dt):
    return rnd(np.asarray(v, dtype=np.int64), dt)

# --- elementwise tile-tile ----------------------------------------------------------

def f64(a):
    return np.asarray(a, dtype=np.float64)

def np_rem(a, b):
    return np.remainder(a, b)

def c_div(a, b):
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)

def c_fmod(a, b):
    return a - c_div(a, b) * b

def py_rem(a, b):
    r = c_fmod(a, b)
    return np.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)

binary = {
    'tadd': (lambda a, b: a + b, lambda a, b: a + b),
    'tsub': (lambda a, b: a - b, lambda a, b: a - b),
    'tmul': (lambda a, b: a * b, lambda a, b: a * b),
    'tdiv': (lambda a, b: a / b, c_div),
    'tmin': (np.minimum, np.minimum),
    'tmax': (np.maximum, np.maximum),
    'trem': (np_rem, py_rem),
    'tfmod': (np.fmod, c_fmod),
}
for op, (ff, fi) in binary.items():
    for dt in ['f32', 'f16', 'bf16', 'i32', 'i8']:
        if dt == 'bf16' and op not in ('tadd', 'tmul'):
            continue
        a = sample(dt, (R, C), -100, 100) if dt in INT else sample(dt, (R, C))
        b = sample(dt, (R, C), -100, 100) if dt in INT else sample(dt, (R, C))
        if op in ('tdiv', 'trem', 'tfmod'):
            b = np.where(b == 0, 3, b).astype(b.dtype)
        if dt in INT:
            want = wrap_int(fi(a.astype(np.int64), b.astype(np.int64)), dt)
        else:
            want = rnd(ff(f64(a), f64(b)), dt)
        vec_case(f'{op}_{dt}', dt, [('a', a), ('b', b)], f'{op} %to, %ta, %tb').want('out', want).write()

for dt in ['f32', 'f16']:
    a, b = sample(dt, (R, C)), sample(dt, (R, C), 0, 1)
    vec_case(f'tprelu_{dt}', dt, [('a', a), ('b', b)], 'tprelu %to, %ta, %tb').want(
        'out', rnd(np.where(f64(a) > 0, f64(a), f64(a) * f64(b)), dt)).write()

for op, f in {'tand': np.bitwise_and, 'tor': np.bitwise_or, 'txor': np.bitwise_xor}.items():
    for dt in ['i32', 'i8']:
        a, b = sample(dt, (R, C), -128, 128), sample(dt, (R, C), -128, 128)
        vec_case(f'{op}_{dt}', dt, [('a', a), ('b', b)], f'{op} %to, %ta, %tb').want('out', f(a, b)).write()

def shl(a, b, bits):
    out = np.where((b < 0) | (b >= bits), 0, np.left_shift(a.astype(np.int64), np.clip(b, 0, 63).astype(np.int64)))
    return out

def shr(a, b, bits):
    filled = np.where(a < 0, -1, 0)
    return np.where((b < 0) | (b >= bits), filled, np.right_shift(a.astype(np.int64), np.clip(b, 0, 63).astype(np.int64)))

for dt, bits in [('i32', 32), ('i8', 8)]:
    a = sample(dt, (R, C), -100, 100)
    b = sample(dt, (R, C), -2, bits + 3)
    vec_case(f'tshl_{dt}', dt, [('a', a), ('b', b)], 'tshl %to, %ta, %tb').want('out', wrap_int(shl(a, b, bits), dt)).write()
    vec_case(f'tshr_{dt}', dt, [('a', a), ('b', b)], 'tshr %to, %ta, %tb').want('out', wrap_int(shr(a, b, bits), dt)).write()

# --- unary --------------------------------------------------------------------------

unary = {
    'texp': (np.exp, -4, 4, 0), 'tlog': (np.log, 0.01, 8, 0), 'tsqrt': (np.sqrt, 0, 9, 0),
    'trsqrt': (lambda x: 1 / np.sqrt(x), 0.05, 9, 0), 'trecip': (lambda x: 1 / x, 0.1, 4, 0),
    'tabs': (np.abs, -4, 4, 0), 'tneg': (np.negative, -4, 4, 0), 'trelu': (lambda x: np.maximum(x, 0), -4, 4, 0),
}
for op, (f, lo, hi, ulp) in unary.items():
    for dt in ['f32', 'f16']:
        a = sample(dt, (R, C), lo, hi)
        vec_case(f'{op}_{dt}', dt, [('a', a)], f'{op} %to, %ta', ulp=ulp).want('out', rnd(f(f64(a)), dt)).write()
for op, f in {'tabs': np.abs, 'tneg': np.negative}.items():
    for dt in ['i32', 'i8']:
        a = sample(dt, (R, C), -128, 128)
        a.reshape(-1)[0] = np.iinfo(INT[dt][0]).min
        vec_case(f'{op}_{dt}', dt, [('a', a)], f'{op} %to, %ta').want('out', wrap_int(f(a.astype(np.int64)), dt)).write()
for dt in ['i32', 'i8']:
    a = sample(dt, (R, C), -128, 128)
    vec_case(f'tnot_{dt}', dt, [('a', a)], 'tnot %to, %ta').want('out', np.invert(a)).write()

# --- ternary and scalar forms -------------------------------------------------------

for dt in ['f32', 'f16', 'i32']:
    a, b, x = (sample(dt, (R, C), -50, 50) for _ in range(3))
    if dt in INT:
        w1, w2 = wrap_int(a.astype(np.int64) + b + x, dt), wrap_int(a.astype(np.int64) - b + x, dt)
    else:
        w1, w2 = rnd(f64(a) + f64(b) + f64(x), dt), rnd(f64(a) - f64(b) + f64(x), dt)
    vec_case(f'taddc_{dt}', dt, [('a', a), ('b', b), ('x', x)], 'taddc %to, %ta, %tb, %tx').want('out', w1).write()
    vec_case(f'tsubc_{dt}', dt, [('a', a), ('b', b), ('x', x)], 'tsubc %to, %ta, %tb, %tx').want('out', w2).write()

scalar_ops = {
    'tadds': (lambda a, s: a + s, lambda a, s: a + s), 'tsubs': (lambda a, s: a - s, lambda a, s: a - s),
    'tmuls': (lambda a, s: a * s, lambda a, s: a * s), 'tdivs': (lambda a, s: a / s, c_div),
    'tmins': (np.minimum, np.minimum), 'tmaxs': (np.maximum, np.maximum),
    'tfmods': (np.fmod, c_fmod), 'trems': (np.remainder, py_rem),
}
for op, (ff, fi) in scalar_ops.items():
    for dt, s in [('f32', 1.75), ('f16', -0.625), ('i32', -7), ('i8', 5)]:
        a = sample(dt, (R, C), -100, 100) if dt in INT else sample(dt, (R, C))
        if dt in INT:
            want = wrap_int(fi(a.astype(np.int64), np.int64(s)), dt)
        else:
            want = rnd(ff(f64(a), s), dt)
        vec_case(f'{op}_{dt}', dt, [('a', a)], f'{op} %to, %ta, {s}').want('out', want).write()
# An immediate the tile's dtype cannot hold: the instruction uses it rounded to the dtype.
for op in ['tadds', 'tsubs', 'tmuls', 'tdivs', 'tmaxs']:
    for dt in ['f32', 'f16']:
        a = sample(dt, (R, C))
        want = rnd(scalar_ops[op][0](f64(a), f64(rnd(0.1, dt))), dt)
        vec_case(f'{op}_{dt}_inexact', dt, [('a', a)], f'{op} %to, %ta, 0.1').want('out', want).write()
for op, f in {'tands': np.bitwise_and, 'tors': np.bitwise_or, 'txors': np.bitwise_xor}.items():
    a = sample('i32', (R, C), -1000, 1000)
    vec_case(f'{op}_i32', 'i32', [('a', a)], f'{op} %to, %ta, 109').want('out', f(a, np.int32(109))).write()
for s in [3, 40, -1]:
    a = sample('i32', (R, C), -1000, 1000)
    tag = str(s).replace('-', 'm')
    vec_case(f'tshls_{tag}', 'i32', [('a', a)], f'tshls %to, %ta, {s}').want('out', wrap_int(shl(a, np.full_like(a, s), 32), 'i32')).write()
    vec_case(f'tshrs_{tag}', 'i32', [('a', a)], f'tshrs %to, %ta, {s}').want('out', wrap_int(shr(a, np.full_like(a, s), 32), 'i32')).write()
a = sample('f32', (R, C))
vec_case('tlrelu_f32', 'f32', [('a', a)], 'tlrelu %to, %ta, 0.125').want('out', rnd(np.where(f64(a) > 0, f64(a), f64(a) * 0.125), 'f32')).write()
for dt, s in [('f32', -2.5), ('i8', -3), ('f16', 1e6)]:
    c = Case(f'texpands_{dt}').param('out', dt, N).tile('to', 'vec', dt, R, C)
    c.op(f'texpands %to, {s}').op(f'tstore %out{FULL}, %to')
    c.want('out', rnd(np.full((R, C), s, dtype=np.float64), dt)).write()

# --- compare and select (packed masks) ----------------------------------------------

def packmask(bits):
    """bits (R x C bools) packed LSB first into an R x C int8 tile's first C/8 bytes."""
    packed = np.packbits(bits.astype(np.uint8), axis=1, bitorder='little').view(np.int8)
    out = np.zeros((bits.shape[0], C), dtype=np.int8)
    out[:, :packed.shape[1]] = packed
    return out

cmps = {'eq': np.equal, 'ne': np.not_equal, 'lt': np.less, 'le': np.less_equal, 'gt': np.greater, 'ge': np.greater_equal}
for mode, f in cmps.items():
    a = sample('f32', (R, C), -2, 2)
    b = np.where(rng.random((R, C)) < 0.3, a, sample('f32', (R, C), -2, 2)).astype(np.float32)
    a[0, 0], b[0, 1] = np.nan, np.nan
    vec_case(f'tcmp_{mode}', 'f32', [('a', a), ('b', b)], f'tcmp.{mode} %to, %ta, %tb', out_dt='i8').want('out', packmask(f(a, b))).write()
    vec_case(f'tcmps_{mode}', 'f32', [('a', a)], f'tcmps.{mode} %to, %ta, 0.5', out_dt='i8').want('out', packmask(f(a, np.float32(0.5)))).write()
# A compare with an immediate an f16 tile cannot hold compares with its f16 rounding.
a = sample('f16', (R, C), -0.2, 0.2)
tenth = rnd(0.1, 'f16')
a[0, :8] = [tenth, np.nextafter(np.float16(tenth), np.float16(1)), np.nextafter(np.float16(tenth), np.float16(0)), 0.1, -0.1, 0, np.nan, -tenth]
a = rnd(a, 'f16')
for mode, f in cmps.items():
    vec_case(f'tcmps_{mode}_f16_inexact', 'f16', [('a', a)], f'tcmps.{mode} %to, %ta, 0.1', out_dt='i8').want('out', packmask(f(a, tenth))).write()
bits = rng.random((R, C)) < 0.5
mask = packmask(bits)
a, b = sample('f32', (R, C)), sample('f32', (R, C))
vec_case('tsel_f32', 'f32', [('m', ('i8', mask)), ('a', a), ('b', b)], 'tsel %to, %tm, %ta, %tb').want('out', np.where(bits, a, b)).write()
vec_case('tsels_f32', 'f32', [('m', ('i8', mask)), ('a', a)], 'tsels %to, %tm, %ta, -9').want('out', np.where(bits, a, np.float32(-9))).write()

# --- conversion with rounding modes -------------------------------------------------

def next_toward(x, dt, up):
    t = {'f32': np.float32, 'f16': np.float16}[dt]
    return np.nextafter(x.astype(t), t(np.inf) if up else t(-np.inf)).astype(np.float64)

def round_mode(x, dt, mode):
    x = f64(x)
    if dt in INT:
        r = {'rint': np.rint, 'round': lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5), 'floor': np.floor,
             'ceil': np.ceil, 'trunc': np.trunc,
             'odd': lambda v: np.where(np.floor(v) == v, v, np.where(np.floor(v) % 2 != 0, np.floor(v), np.floor(v) + 1))}[mode](x)
        return wrap_int(r.astype(np.int64), dt)
    t = {'f32': np.float32, 'f16': np.float16}[dt]
    n = x.astype(t).astype(np.float64)
    lo = np.where(n <= x, n, next_toward(n, dt, False))
    hi = np.where(n >= x, n, next_toward(n, dt, True))
    exact = n == x
    if mode == 'rint':
        r = n
    elif mode == 'floor':
        r = lo
    elif mode == 'ceil':
        r = hi
    elif mode == 'trunc':
        r = np.where(x > 0, lo, hi)
    elif mode == 'round':
        dl, dh = x - lo, hi - x
        r = np.where(dl < dh, lo, np.where(dh < dl, hi, np.where(x > 0, hi, lo)))
    else:  # odd
        bits = lo.astype(t).view(np.uint16 if dt == 'f16' else np.uint32)
        r = np.where(bits & 1 == 1, lo, hi)
    return np.where(exact, n, r).astype(np.float32)

for mode in ['', 'rint', 'round', 'floor', 'ceil', 'trunc', 'odd']:
    suffix = '.' + mode if mode else ''
    x = rng.uniform(-3, 3, size=(R, C)).astype(np.float32)
    x.reshape(-1)[:6] = [0.5, -0.5, 1.5, -2.5, 2.0, 1e9]
    for dt in ['f16', 'i32', 'i8']:
        m = mode or ('rint' if dt == 'f16' else 'trunc')
        want = round_mode(x, dt, m)
        vec_case(f'tcvt_{mode or "default"}_{dt}', 'f32', [('a', x)], f'tcvt{suffix} %to, %ta', out_dt=dt).want('out', want).write()
for src, dst in [('f16', 'f32'), ('i32', 'f32'), ('i8', 'f16'), ('f32', 'bf16')]:
    a = sample(src, (R, C), -100, 100)
    vec_case(f'tcvt_{src}_{dst}', src, [('a', a)], 'tcvt %to, %ta', out_dt=dst).want('out', rnd(f64(a), dst)).write()

# --- reductions and broadcasts ------------------------------------------------------

LANES = 64

def lane_reduce(x, mul=False):
    """Row sums (products) of a 2-D array in the vector unit's fp32 order: element k of a
    row goes to lane k % 64, each lane starts with its first element and adds the later
    ones in order; then lane i takes lane i + h for h = 32, 16, ..., 1 (lanes with no
    element take no part). Every operation is a numpy float32 operation."""
    x = np.asarray(x, dtype=np.float32)
    op = np.multiply if mul else np.add
    n = x.shape[1]
    if n == 0:
        return np.full(x.shape[0], 1 if mul else 0, dtype=np.float32)
    used = min(n, LANES)
    acc = x[:, :used].copy()
    for k in range(LANES, n, LANES):
        blk = x[:, k:k + LANES]
        acc[:, :blk.shape[1]] = op(acc[:, :blk.shape[1]], blk)
    h = LANES // 2
    while h >= 1:
        for i in range(min(h, max(used - h, 0))):
            acc[:, i] = op(acc[:, i], acc[:, i + h])
        h //= 2
    return acc[:, 0]

def col_reduce(x, mul=False):
    """Column sums (products) in fp32, adding the rows in order from row 0."""
    x = np.asarray(x, dtype=np.float32)
    acc = x[0].copy()
    for r in range(1, x.shape[0]):
        acc = np.multiply(acc, x[r]) if mul else np.add(acc, x[r])
    return acc

RR = 8
float_order = {'sum': lambda a, axis: lane_reduce(a) if axis == 1 else col_reduce(a),
               'prod': lambda a, axis: lane_reduce(a, True) if axis == 1 else col_reduce(a, True)}
for op, f in {'sum': np.sum, 'prod': np.prod, 'max': np.max, 'min': np.min}.items():
    for dt in ['f32', 'f16', 'i32']:
        lo, hi = (0.5, 1.5) if op == 'prod' else (-4, 4)
        a = sample(dt, (RR, C), -3, 4) if dt in INT else sample(dt, (RR, C), lo, hi)
        c = Case(f'trow{op}_{dt}').param('a', dt, RR * C, a).param('out', dt, RR)
        c.tile('ta', 'vec', dt, RR, C).tile('to', 'vec', dt, RR, 32 // {'f32': 4, 'f16': 2, 'i32': 4}[dt], )
        c.op(f'tload %ta, %a[0; {RR}x{C}; {C},1]').op(f'trow{op} %to, %ta').op(f'tstore %out[0; {RR}x1; 1,1], %to')
        if dt in INT:
            want = wrap_int(f(a.astype(np.int64), axis=1), dt)
        else:
            want = rnd(float_order.get(op, f)(a, axis=1), dt)
        c.want('out', want).write()
        c = Case(f'tcol{op}_{dt}').param('a', dt, RR * C, a).param('out', dt, C)
        c.tile('ta', 'vec', dt, RR, C).tile('to', 'vec', dt, 1, C)
        c.op(f'tload %ta, %a[0; {RR}x{C}; {C},1]').op(f'tcol{op} %to, %ta').op(f'tstore %out[0; 1x{C}; {C},1], %to')
        want = wrap_int(f(a.astype(np.int64), axis=0), dt) if dt in INT else rnd(float_order.get(op, f)(a, axis=0), dt)
        c.want('out', want).write()

# Long rows of normal values, whose sums are not exact in fp32: every lane takes many
# repeats and a valid width that is not a multiple of 64 leaves lanes short.
for dt, cols, valid in [('f32', 4096, 4096), ('f32', 1000, 777), ('f16', 2048, 2000), ('bf16', 512, 300)]:
    rows = 32 // {'f32': 4, 'f16': 2, 'bf16': 2}[dt]  # a DN column of 32 bytes
    a = rnd(rng.standard_normal((rows, cols)) * 3, dt)
    c = Case(f'trowsum_long_{dt}_{valid}').param('a', dt, rows * cols, a).param('out', dt, rows)
    c.tile('ta', 'vec', dt, rows, cols, f'valid {rows}x{valid}').tile('to', 'vec', dt, rows, 1, 'dn')
    c.op(f'tload %ta, %a[0; {rows}x{cols}; {cols},1]').op('trowsum %to, %ta').op(f'tstore %out[0; {rows}x1; 1,1], %to')
    c.want('out', rnd(lane_reduce(a[:, :valid]), dt)).write()
a = rnd(rng.standard_normal((300, 64)), 'f32')
c = Case('tcolsum_long_f32').param('a', 'f32', 300 * 64, a).param('out', 'f32', 64)
c.tile('ta', 'vec', 'f32', 300, 64).tile('to', 'vec', 'f32', 1, 64)
c.op('tload %ta, %a[0; 300x64; 64,1]').op('tcolsum %to, %ta').op('tstore %out[0; 1x64; 64,1], %to')
c.want('out', col_reduce(a)).write()

# A row reduction into a column (DN) tile over a valid region.
a = sample('f32', (RR, C))
c = Case('trowsum_valid_dn').param('a', 'f32', RR * C, a).param('out', 'f32', RR)
c.tile('ta', 'vec', 'f32', RR, C, 'valid 5x20').tile('to', 'vec', 'f32', RR, 1, 'dn')
c.op(f'tload %ta, %a[0; {RR}x{C}; {C},1]').op('trowsum %to, %ta').op(f'tstore %out[0; {RR}x1; 1,1], %to')
want = np.zeros(RR, dtype=np.float32)
want[:5] = lane_reduce(a[:5, :20])
c.want('out', want).write()

expand = {'add': np.add, 'sub': np.subtract, 'mul': np.multiply, 'div': np.divide, 'max': np.maximum,
          'min': np.minimum, 'expdif': lambda a, b: np.exp(rnd(a - b, 'f32').astype(np.float64))}  # the difference rounds first
for op, f in expand.items():
    a = sample('f32', (RR, C))
    col = sample('f32', (RR, 1), 0.5, 2)
    row = sample('f32', (1, C), 0.5, 2)
    ulp = 0
    c = Case(f'trowexpand{op}', ulp=ulp).param('a', 'f32', RR * C, a).param('b', 'f32', RR, col).param('out', 'f32', RR * C)
    c.tile('ta', 'vec', 'f32', RR, C).tile('tb', 'vec', 'f32', RR, 1, 'dn').tile('to', 'vec', 'f32', RR, C)
    c.op(f'tload %ta, %a[0; {RR}x{C}; {C},1]').op(f'tload %tb, %b[0; {RR}x1; 1,1]')
    c.op(f'trowexpand{op} %to, %ta, %tb').op(f'tstore %out[0; {RR}x{C}; {C},1], %to')
    c.want('out', rnd(f(f64(a), f64(col)), 'f32')).write()
    c = Case(f'tcolexpand{op}', ulp=ulp).param('a', 'f32', RR * C, a).param('b', 'f32', C, row).param('out', 'f32', RR * C)
    c.tile('ta', 'vec', 'f32', RR, C).tile('tb', 'vec', 'f32', 1, C).tile('to', 'vec', 'f32', RR, C)
    c.op(f'tload %ta, %a[0; {RR}x{C}; {C},1]').op(f'tload %tb, %b[0; 1x{C}; {C},1]')
    c.op(f'tcolexpand{op} %to, %ta, %tb').op(f'tstore %out[0; {RR}x{C}; {C},1], %to')
    c.want('out', rnd(f(f64(a), f64(row)), 'f32')).write()
col, row = sample('f32', (RR, 1)), sample('f32', (1, C))
c = Case('trowexpand').param('b', 'f32', RR, col).param('out', 'f32', RR * C)
c.tile('tb', 'vec', 'f32', RR, 1, 'dn').tile('to', 'vec', 'f32', RR, C)
c.op(f'tload %tb, %b[0; {RR}x1; 1,1]').op('trowexpand %to, %tb').op(f'tstore %out[0; {RR}x{C}; {C},1], %to')
c.want('out', np.broadcast_to(col, (RR, C))).write()
c = Case('tcolexpand').param('b', 'f32', C, row).param('out', 'f32', RR * C)
c.tile('tb', 'vec', 'f32', 1, C).tile('to', 'vec', 'f32', RR, C)
c.op(f'tload %tb, %b[0; 1x{C}; {C},1]').op('tcolexpand %to, %tb').op(f'tstore %out[0; {RR}x{C}; {C},1], %to')
c.want('out', np.broadcast_to(row, (RR, C))).write()

# --- movement, padding, generators, partial ops, quantisation -----------------------

a = sample('f32', (R, C))
c = Case('tfillpad').param('a', 'f32', N, a).param('out', 'f32', N)
c.tile('ta', 'vec', 'f32', R, C, 'valid 3x20').tile('to', 'vec', 'f32', R, C)
c.op(f'tload %ta, %a{FULL}').op('tfillpad %to, %ta, -Inf').op(f'tstore %out{FULL}, %to')
w = np.full((R, C), -np.inf, dtype=np.float32)
w[:3, :20] = a[:3, :20]
c.want('out', w).write()

a = sample('f32', (RR, C))
c = Case('ttrans').param('a', 'f32', RR * C, a).param('out', 'f32', RR * C)
c.tile('ta', 'vec', 'f32', RR, C).tile('to', 'vec', 'f32', C, RR)
c.op(f'tload %ta, %a[0; {RR}x{C}; {C},1]').op('ttrans %to, %ta').op(f'tstore %out[0; {C}x{RR}; {RR},1], %to')
c.want('out', a.T).write()

for dt, start, step in [('i32', 5, -3), ('f32', 0.5, 0.25)]:
    c = Case(f'tci_{dt}').param('out', dt, N).tile('to', 'vec', dt, R, C, 'valid 3x*')
    c.op(f'tci %to, {start}, {step}').op(f'tstore %out{FULL}, %to')
    w = (start + np.arange(N) * step).reshape(R, C)
    w[3:] = 0
    c.want('out', rnd(w, dt)).write()
for mode, d in [('', 0), ('', 3), ('upper', 0), ('upper', -2)]:
    c = Case(f'ttri{"_" + mode if mode else ""}_{str(d).replace("-", "m")}').param('out', 'f32', RR * C)
    c.tile('to', 'vec', 'f32', RR, C).op(f'ttri{"." + mode if mode else ""} %to, {d}').op(f'tstore %out[0; {RR}x{C}; {C},1], %to')
    r, cc = np.meshgrid(np.arange(RR), np.arange(C), indexing='ij')
    c.want('out', ((cc - r >= d) if mode else (cc - r <= d)).astype(np.float32)).write()

for op, f in {'add': np.add, 'mul': np.multiply, 'max': np.maximum, 'min': np.minimum}.items():
    a, b = sample('f32', (R, C)), sample('f32', (R, C))
    c = Case(f'tpart{op}').param('a', 'f32', N, a).param('b', 'f32', N, b).param('out', 'f32', N)
    c.tile('ta', 'vec', 'f32', R, C, 'valid 4x20').tile('tb', 'vec', 'f32', R, C, 'valid 2x32').tile('to', 'vec', 'f32', R, C)
    c.op(f'tload %ta, %a{FULL}').op(f'tload %tb, %b{FULL}').op('texpands %to, 7').op(f'tpart{op} %to, %ta, %tb').op(f'tstore %out{FULL}, %to')
    w = np.full((R, C), 7, dtype=np.float64)
    ina = np.zeros((R, C), bool); ina[:4, :20] = True
    inb = np.zeros((R, C), bool); inb[:2, :] = True
    w = np.where(ina & inb, f(f64(a), f64(b)), np.where(ina, a, np.where(inb, b, w)))
    c.want('out', rnd(w, 'f32')).write()

x = sample('f32', (RR, C), -300, 300)
scale = sample('f32', (RR, 1), 0.05, 1)
off = sample('f32', (RR, 1), -3, 3)
c = Case('tquant').param('x', 'f32', RR * C, x).param('s', 'f32', RR, scale).param('z', 'f32', RR, off).param('out', 'i8', RR * C)
c.tile('tx', 'vec', 'f32', RR, C).tile('ts', 'vec', 'f32', RR, 1, 'dn').tile('tz', 'vec', 'f32', RR, 1, 'dn').tile('to', 'vec', 'i8', RR, C)
c.op(f'tload %tx, %x[0; {RR}x{C}; {C},1]').op(f'tload %ts, %s[0; {RR}x1; 1,1]').op(f'tload %tz, %z[0; {RR}x1; 1,1]')
c.op('tquant %to, %tx, %ts, %tz').op(f'tstore %out[0; {RR}x{C}; {C},1], %to')
c.want('out', np.clip(np.rint(f64(x) * f64(scale) + f64(off)), -128, 127).astype(np.int8)).write()
q = sample('i8', (RR, C), -128, 128)
c = Case('tdequant').param('x', 'i8', RR * C, q).param('s', 'f32', RR, scale).param('z', 'f32', RR, off).param('out', 'f32', RR * C)
c.tile('tx', 'vec', 'i8', RR, C).tile('ts', 'vec', 'f32', RR, 1, 'dn').tile('tz', 'vec', 'f32', RR, 1, 'dn').tile('to', 'vec', 'f32', RR, C)
c.op(f'tload %tx, %x[0; {RR}x{C}; {C},1]').op(f'tload %ts, %s[0; {RR}x1; 1,1]').op(f'tload %tz, %z[0; {RR}x1; 1,1]')
c.op('tdequant %to, %tx, %ts, %tz').op(f'tstore %out[0; {RR}x{C}; {C},1], %to')
c.want('out', rnd((f64(q) - f64(off)) * f64(scale), 'f32')).write()

# --- gather, scatter, sorting -------------------------------------------------------

src = sample('f32', (R, C))
idx = rng.integers(0, N, size=(R, C)).astype(np.int32)
vec_case('tgather', 'f32', [('s', src), ('i', ('i32', idx))], 'tgather %to, %ts, %ti').want('out', src.reshape(-1)[idx]).write()
vec_case('tgatherb', 'f32', [('s', src), ('i', ('i32', (idx * 4).astype(np.int32)))], 'tgatherb %to, %ts, %ti').want('out', src.reshape(-1)[idx]).write()
dst0 = sample('f32', (R, C))
sidx = rng.integers(0, N, size=(R, C)).astype(np.int32)
w = dst0.reshape(-1).copy()
for k, v in zip(sidx.reshape(-1), src.reshape(-1)):
    w[k] = v
c = Case('tscatter').param('d', 'f32', N, dst0).param('s', 'f32', N, src).param('i', 'i32', N, sidx).param('out', 'f32', N)
c.tile('to', 'vec', 'f32', R, C).tile('ts', 'vec', 'f32', R, C).tile('ti', 'vec', 'i32', R, C)
c.op(f'tload %to, %d{FULL}').op(f'tload %ts, %s{FULL}').op(f'tload %ti, %i{FULL}').op('tscatter %to, %ts, %ti').op(f'tstore %out{FULL}, %to')
c.want('out', w).write()

vals = rnd(rng.integers(-6, 6, size=(R, 64)) / 2, 'f32')  # many ties
ids = np.arange(R * 64, dtype=np.int32).reshape(R, 64)
c = Case('tsort32').param('v', 'f32', R * 64, vals).param('i', 'i32', R * 64, ids).param('out', 'f32', R * 128)
c.tile('tv', 'vec', 'f32', R, 64).tile('ti', 'vec', 'i32', R, 64).tile('to', 'vec', 'f32', R, 128)
c.op('tload %tv, %v[0; 4x64; 64,1]').op('tload %ti, %i[0; 4x64; 64,1]').op('tsort32 %to, %tv, %ti').op('tstore %out[0; 4x128; 128,1], %to')
w = np.zeros((R, 128), dtype=np.float32)
for r in range(R):
    for blk in range(2):
        v = vals[r, blk * 32:(blk + 1) * 32]
        order = np.argsort(-v, kind='stable')
        w[r, blk * 64:(blk + 1) * 64:2] = v[order]
        w[r, blk * 64 + 1:(blk + 1) * 64:2] = ids[r, blk * 32:(blk + 1) * 32][order]
c.want('out', w).write()

def sorted_runs(gen, rows, pairs, n):
    """rows of (value, index) pairs in runs of n, each sorted descending."""
    runs = np.zeros((rows, 2 * pairs), dtype=np.float32)
    for r in range(rows):
        for k in range(pairs // n):
            v = np.sort(rnd(gen.integers(-5, 5, size=n) / 2, 'f32'))[::-1]
            runs[r, 2 * k * n:2 * (k + 1) * n:2] = v
            runs[r, 2 * k * n + 1:2 * (k + 1) * n:2] = np.arange(k * n, (k + 1) * n)
    return runs

def merge_groups(runs, pairs, n):
    """each row's groups of 4 runs merged (a stable descending sort of the group)."""
    w = runs.copy()
    for r in range(runs.shape[0]):
        for g in range(0, pairs, 4 * n):
            end = min(g + 4 * n, pairs)
            seg = runs[r, 2 * g:2 * end].reshape(-1, 2)
            order = np.argsort(-seg[:, 0], kind='stable')
            w[r, 2 * g:2 * end] = seg[order].reshape(-1)
    return w

n = 4
pairs = 48  # groups of 4 runs of 4 pairs: 16, 16, then 16
runs = sorted_runs(rng, R, pairs, n)
w = merge_groups(runs, pairs, n)
vec_case('tmrgsort', 'f32', [('a', runs)], f'tmrgsort %to, %ta, {n}', out_shape=(R, 2 * pairs)).want('out', w).write()

# --- memory -------------------------------------------------------------------------

g = sample('f32', (10, 50))
c = Case('tload_window').param('g', 'f32', 500, g).param('out', 'f32', N)
c.tile('ta', 'vec', 'f32', R, C).op('tload %ta, %g[7; 3x20; 100,2]').op(f'tstore %out{FULL}, %ta')
w = np.zeros((R, C), dtype=np.float32)
flat = g.reshape(-1)
for r in range(3):
    for cc in range(20):
        w[r, cc] = flat[7 + r * 100 + cc * 2]
c.want('out', w).write()
o = sample('f32', (R, C))
c = Case('tstore_add').param('a', 'f32', N, a).param('out', 'f32', N, o)
c.tile('ta', 'vec', 'f32', R, C).op(f'tload %ta, %a{FULL}').op('tstore.add %out[0; 2x32; 64,1], %ta').op('tprefetch %a[0; 1x1; 1,1]')
w = o.copy().reshape(-1)
w[0:32] = rnd(f64(w[0:32]) + f64(a[0]), 'f32')
w[64:96] = rnd(f64(w[64:96]) + f64(a[1]), 'f32')
c.want('out', w).write()
gidx = rng.integers(0, 60, size=(R, C)).astype(np.int32)
c = Case('mgather').param('g', 'f32', 500, g).param('i', 'i32', N, gidx).param('out', 'f32', N)
c.tile('ti', 'vec', 'i32', R, C).tile('to', 'vec', 'f32', R, C)
c.op(f'tload %ti, %i{FULL}').op('mgather %to, %g[3; 6x10; 50,1], %ti').op(f'tstore %out{FULL}, %to')
c.want('out', flat[3 + (gidx // 10) * 50 + gidx % 10]).write()
perm = rng.permutation(200)[:N].astype(np.int32).reshape(R, C)
c = Case('mscatter').param('s', 'f32', N, src).param('i', 'i32', N, perm).param('out', 'f32', 500, g)
c.tile('ts', 'vec', 'f32', R, C).tile('ti', 'vec', 'i32', R, C)
c.op(f'tload %ts, %s{FULL}').op(f'tload %ti, %i{FULL}').op('mscatter %out[0; 10x20; 50,1], %ts, %ti')
w = g.copy().reshape(-1)
for k, v in zip(perm.reshape(-1), src.reshape(-1)):
    w[(k // 20) * 50 + k % 20] = v
c.want('out', w).write()

r = sample('f32', (R, C))
c = Case('treshape').param('a', 'f32', N, r).param('out', 'i32', N).param('out2', 'f32', N)
c.tile('ta', 'vec', 'f32', R, C).tile('tb', 'vec', 'i32', R, C).tile('tc', 'vec', 'f32', 2 * R, C // 2)
c.op(f'tload %ta, %a{FULL}').op('treshape %tb, %ta').op('treshape %tc, %ta').op(f'tstore %out{FULL}, %tb').op(f'tstore %out2[0; 8x16; 16,1], %tc')
c.want('out', r.view(np.int32)).want('out2', r).write()

# --- cube ---------------------------------------------------------------------------

M, K, Nn = 16, 64, 32

def cube_case(name, dt, body, extra_tiles=(), extra_params=(), acc='f32'):
    a = sample(dt, (M, K), -8, 8) if dt == 'i8' else sample(dt, (M, K), -2, 2)
    b = sample(dt, (K, Nn), -8, 8) if dt == 'i8' else sample(dt, (K, Nn), -2, 2)
    c = Case(name, core='cube').param('a', dt, M * K, a).param('b', dt, K * Nn, b)
    for p in extra_params:
        c.param(*p)
    c.param('out', acc, M * Nn)
    c.tile('ma', 'mat', dt, M, K).tile('mb', 'mat', dt, K, Nn).tile('la', 'left', dt, M, K).tile('rb', 'right', dt, K, Nn)
    c.tile('acc', 'acc', acc, M, Nn)
    for t in extra_tiles:
        c.tile(*t)
    c.op(f'tload %ma, %a[0; {M}x{K}; {K},1]').op(f'tload %mb, %b[0; {K}x{Nn}; {Nn},1]')
    c.op('tmov %la, %ma').op('tmov %rb, %mb')
    for line in body:
        c.op(line)
    c.op(f'tstore %out[0; {M}x{Nn}; {Nn},1], %acc')
    return c, a.astype(np.int64) if dt == 'i8' else f64(a), b.astype(np.int64) if dt == 'i8' else f64(b)

for dt in ['f16', 'bf16', 'f32', 'i8']:
    acc = 'i32' if dt == 'i8' else 'f32'
    c, a, b = cube_case(f'tmatmul_{dt}', dt, ['tmatmul %acc, %la, %rb'], acc=acc)
    c.want('out', rnd(a @ b, acc)).write()
c, a, b = cube_case('tmatmul_acc', 'f16', ['tmatmul %acc, %la, %rb', 'tmatmul.acc %acc, %la, %rb'])
c.want('out', rnd(rnd(a @ b, 'f32') + a @ b, 'f32')).write()
bias = sample('f32', (1, Nn))
c, a, b = cube_case('tmatmul_bias', 'f16', ['tload %mbias, %bias[0; 1x32; 32,1]', 'tmov %bt, %mbias', 'tmatmul.bias %acc, %la, %rb, %bt'],
                    extra_tiles=[('mbias', 'mat', 'f32', 1, Nn), ('bt', 'bias', 'f32', 1, Nn)], extra_params=[('bias', 'f32', Nn, bias)])
c.want('out', rnd(a @ b + f64(bias), 'f32')).write()

# MX: block scales along k (blocks of 32), loaded into Scaling through Mat.
asc = rnd(2.0 ** rng.integers(-2, 3, size=(M, K // 32)), 'f32')
bsc = rnd(2.0 ** rng.integers(-2, 3, size=(K // 32, Nn)), 'f32')
mx_tiles = [('mas', 'mat', 'f32', M, K // 32, 'dn'), ('mbs', 'mat', 'f32', K // 32, Nn),
            ('sa', 'scaling', 'f32', M, K // 32), ('sb', 'scaling', 'f32', K // 32, Nn)]
mx_params = [('as', 'f32', M * K // 32, asc), ('bs', 'f32', K // 32 * Nn, bsc)]
mx_load = [f'tload %mas, %as[0; {M}x{K // 32}; {K // 32},1]', f'tload %mbs, %bs[0; {K // 32}x{Nn}; {Nn},1]',
           'tmov %sa, %mas', 'tmov %sb, %mbs']
scale_a = np.repeat(f64(asc), 32, axis=1)
scale_b = np.repeat(f64(bsc), 32, axis=0)
c, a, b = cube_case('tmatmul_mx', 'i8', mx_load + ['tmatmul.mx %acc, %la, %sa, %rb, %sb'], extra_tiles=mx_tiles, extra_params=mx_params)
c.want('out', rnd((f64(a) * scale_a) @ (f64(b) * scale_b), 'f32')).write()

# GEMV: only row 0 of dst changes; the rest keeps the first product.
c, a, b = cube_case('tgemv', 'f16', ['texpands_placeholder'])
c.body = [l for l in c.body if 'placeholder' not in l]
c.body.insert(len(c.body) - 1, '  tmatmul %acc, %la, %rb')
c.body.insert(len(c.body) - 1, '  tgemv.acc %acc, %la, %rb')
w = rnd(a @ b, 'f32')
w[0] = rnd(f64(w[0]) + a[0] @ b, 'f32')
c.want('out', w).write()
c, a, b = cube_case('tgemv_bias', 'f16', ['tload %mbias, %bias[0; 1x32; 32,1]', 'tmov %bt, %mbias', 'tmatmul %acc, %la, %rb', 'tgemv.bias %acc, %la, %rb, %bt'],
                    extra_tiles=[('mbias', 'mat', 'f32', 1, Nn), ('bt', 'bias', 'f32', 1, Nn)], extra_params=[('bias', 'f32', Nn, bias)])
w = rnd(a @ b, 'f32')
w[0] = rnd(a[0] @ b + f64(bias[0]), 'f32')
c.want('out', w).write()
c, a, b = cube_case('tgemv_plain', 'f32', ['tmatmul %acc, %la, %rb', 'tgemv %acc, %la, %rb'])
c.want('out', rnd(a @ b, 'f32')).write()
c, a, b = cube_case('tgemv_mx', 'f16', mx_load + ['tmatmul %acc, %la, %rb', 'tgemv.mx %acc, %la, %sa, %rb, %sb'], extra_tiles=mx_tiles, extra_params=mx_params)
w = rnd(a @ b, 'f32')
w[0] = rnd((a[0] * scale_a[0]) @ (b * scale_b), 'f32')
c.want('out', w).write()

# textract, tinsert (acc -> mat), tstore.fp, tmov.fp: checked on the final tile values
# or through GM.
c, a, b = cube_case('textract', 'f16', ['textract %l2, %ma, 0, 32', 'textract %r2, %mb, 16, 0', 'tmatmul %acc, %l2, %r2'],
                    extra_tiles=[('l2', 'left', 'f16', M, 32), ('r2', 'right', 'f16', 32, Nn)])
c.want('out', rnd(a[:, 32:64] @ b[16:48, :], 'f32')).write()
c, a, b = cube_case('tinsert', 'f16', ['tmatmul %acc, %la, %rb', 'tinsert %m2, %acc, 16, 0'],
                    extra_tiles=[('m2', 'mat', 'f16', 2 * M, Nn)])
w = np.zeros((2 * M, Nn), dtype=np.float32)
w[16:32] = rnd(rnd(a @ b, 'f32'), 'f16')
c.want_tile('m2', w).want('out', rnd(a @ b, 'f32')).write()
fp = rnd(rng.uniform(0.01, 0.2, size=(1, Nn)), 'f32')
c, a, b = cube_case('tstore_fp', 'f16', ['tmatmul %acc, %la, %rb', 'tload %mfp, %fp[0; 1x32; 32,1]', 'tmov %sfp, %mfp', 'tstore.fp %q[0; 16x32; 32,1], %acc, %sfp'],
                    extra_tiles=[('mfp', 'mat', 'f32', 1, Nn), ('sfp', 'scaling', 'f32', 1, Nn)], extra_params=[('fp', 'f32', Nn, fp), ('q', 'i8', M * Nn)])
prod = f64(rnd(a @ b, 'f32'))
c.want('q', np.clip(np.rint(prod * f64(fp)), -128, 127).astype(np.int8)).want('out', rnd(a @ b, 'f32')).write()
c, a, b = cube_case('tmov_fp', 'f16', ['tmatmul %acc, %la, %rb', 'tload %mfp, %fp[0; 1x32; 32,1]', 'tmov %sfp, %mfp', 'tmov.fp %v, %acc, %sfp'],
                    extra_tiles=[('mfp', 'mat', 'f32', 1, Nn), ('sfp', 'scaling', 'f32', 1, Nn), ('v', 'vec', 'f16', M, Nn)], extra_params=[('fp', 'f32', Nn, fp)])
c.want_tile('v', rnd(f64(rnd(a @ b, 'f32')) * f64(fp), 'f16')).want('out', rnd(a @ b, 'f32')).write()

# img2col: a 5 x 4 image of 16 channels (f16) stored pixel-major, 3x3 kernel, stride 1,
# one column of padding left and two right, two rows above, 4 rows of output positions.
H, W, CH, PL, PR, PT, OH = 5, 4, 16, 1, 2, 2, 4
OW = W + PL + PR - 3 + 1
img = sample('f16', (H * W, CH))
c = Case('timg2col', core='cube').param('img', 'f16', H * W * CH, img)
c.tile('mi', 'mat', 'f16', H * W, CH).tile('col', 'left', 'f16', 32, 160)
c.op(f'tload %mi, %img[0; {H * W}x{CH}; {CH},1]').op(f'timg2col %col, %mi, {W}, 3, 3, 1, {PL}, {PR}, {PT}, {OH}')
w = np.zeros((32, 160), dtype=np.float32)
for oh in range(OH):
    for ow in range(OW):
        for i in range(3):
            for j in range(3):
                y, x = oh - PT + i, ow - PL + j
                if 0 <= y < H and 0 <= x < W:
                    w[oh * OW + ow, (i * 3 + j) * CH:(i * 3 + j + 1) * CH] = img[y * W + x]
c.want_tile('col', w).write()

# The fixpipe's relu on the way out of Acc (tstore.relu), beside the plain store.
c, a, b = cube_case('tstore_relu', 'f16', ['tmatmul %acc, %la, %rb', f'tstore.relu %outr[0; {M}x{Nn}; {Nn},1], %acc'],
                    extra_params=[('outr', 'f16', M * Nn)])
c.want('out', rnd(a @ b, 'f32')).want('outr', rnd(np.maximum(rnd(a @ b, 'f32'), 0), 'f16')).write()

# Reductions over partial valid regions into a destination of exactly the region they
# write (a DN column for rows), for every dtype: odd row and column counts, and rows
# longer than the 64 lanes with a short last repeat. Their own generator, so that the
# cases above keep their inputs.
red_rng = np.random.default_rng(20261206)
def red_sample(dt, shape, op):
    if dt in INT:
        lo, hi = (-2, 3) if op == 'prod' else ((-100, 100) if dt == 'i8' else (-1 << 30, 1 << 30))
        return rnd(red_rng.integers(lo, hi, size=shape), dt)
    lo, hi = (0.8, 1.25) if op == 'prod' else (-4, 4)
    return rnd(red_rng.uniform(lo, hi, size=shape), dt)
red_f = {'sum': np.sum, 'prod': np.prod, 'max': np.max, 'min': np.min}
for op, f in red_f.items():
    for dt in ['f32', 'f16', 'i32', 'i8']:
        rows = 32 // {'f32': 4, 'f16': 2, 'i32': 4, 'i8': 1}[dt]
        for cols, vr, vc in [(32, rows - 3, 27), (128, rows, 101)]:
            a = red_sample(dt, (rows, cols), op)
            name = f'trow{op}_{dt}_v{vr}x{vc}'
            c = Case(name).param('a', dt, rows * cols, a).param('out', dt, rows)
            c.tile('ta', 'vec', dt, rows, cols, f'valid {vr}x{vc}').tile('to', 'vec', dt, rows, 1, f'valid {vr}x1 dn')
            c.op(f'tload %ta, %a[0; {rows}x{cols}; {cols},1]').op(f'trow{op} %to, %ta').op(f'tstore %out[0; {rows}x1; 1,1], %to')
            want = np.zeros(rows, dtype=rnd(np.zeros(1), dt).dtype)
            x = a[:vr, :vc]
            if dt in INT:
                want[:vr] = wrap_int(f(x.astype(np.int64), axis=1), dt)
            else:
                want[:vr] = rnd(float_order.get(op, f)(x, axis=1), dt)
            c.want('out', want).write()
        cols = 64 if dt == 'i8' else 32
        for nrows, vr, vc in [(7, 7, cols), (13, 9, cols - 5)]:
            a = red_sample(dt, (nrows, cols), op)
            name = f'tcol{op}_{dt}_v{vr}x{vc}'
            c = Case(name).param('a', dt, nrows * cols, a).param('out', dt, cols)
            c.tile('ta', 'vec', dt, nrows, cols, f'valid {vr}x{vc}').tile('to', 'vec', dt, 1, cols, f'valid 1x{vc}')
            c.op(f'tload %ta, %a[0; {nrows}x{cols}; {cols},1]').op(f'tcol{op} %to, %ta').op(f'tstore %out[0; 1x{cols}; {cols},1], %to')
            want = np.zeros(cols, dtype=rnd(np.zeros(1), dt).dtype)
            x = a[:vr, :vc]
            if dt in INT:
                want[:vc] = wrap_int(f(x.astype(np.int64), axis=0), dt)
            else:
                want[:vc] = rnd(float_order.get(op, f)(x, axis=0), dt)
            c.want('out', want).write()

# Merges of several rows: rows of whole groups of 4 runs (as the compiler's sorts do),
# runs of n pairs in rows of 8n and 4n pairs, and rows whose last group is short.
for n, pairs in [(4, 32), (32, 128), (4, 40)]:
    rows = 3
    runs = sorted_runs(red_rng, rows, pairs, n)
    w = merge_groups(runs, pairs, n)
    vec_case(f'tmrgsort_rows_{n}x{pairs}', 'f32', [('a', runs)], f'tmrgsort %to, %ta, {n}', out_shape=(rows, 2 * pairs)).want('out', w).write()

# --- compares into a mask with bits (drawn last: the cases above keep their inputs) ---

# Compares of every dtype and predicate into a mask that already holds bits: over a's
# valid region (fixed, or from registers; partial bytes at its edge) the bits are the
# predicate's, every other bit of the mask keeps its value.
def merge_mask(bits, init, vr, vc):
    u = init.view(np.uint8).copy()
    for r in range(vr):
        for c in range(vc):
            u[r, c // 8] = (u[r, c // 8] & ~np.uint8(1 << (c % 8))) | np.uint8(int(bits[r, c]) << (c % 8))
    return u.view(np.int8)

def compare_case(name, dt, op_line, a, b, bits, valid=None, regs=None, mcols=C):
    """a compare into a mask tile loaded with random bits first; valid: 'RxC' or None."""
    init = rng.integers(-128, 128, size=(R, mcols)).astype(np.int8)
    rows, cols = a.shape
    c = Case(name).param('a', dt, a.size, a)
    if b is not None:
        c.param('b', dt, b.size, b)
    c.param('m', 'i8', init.size, init).param('out', 'i8', init.size)
    vr, vc = rows, cols
    extra = ''
    if valid:
        vr, vc = valid
        extra = f'valid {vr}x{vc}'
    if regs:
        extra = 'valid %vr x %vc'
    if b is not None:
        c.tile('tb', 'vec', dt, rows, cols)
    c.tile('tm', 'vec', 'i8', R, mcols)
    c.tile('ta', 'vec', dt, rows, cols, extra)  # last: the export declares a register-sized tile where it is used
    if regs:
        c.params += ['reg %vr', 'reg %vc']
        c.op(f'smov %vr, {vr}').op(f'smov %vc, {vc}')
    c.op(f'tload %tm, %m[0; {R}x{mcols}; {mcols},1]')
    c.op(f'tload %ta, %a[0; {rows}x{cols}; {cols},1]')
    if b is not None:
        c.op(f'tload %tb, %b[0; {rows}x{cols}; {cols},1]')
    c.op(op_line).op(f'tstore %out[0; {R}x{mcols}; {mcols},1], %tm')
    c.want('out', merge_mask(bits, init, vr, vc)).write()

def compare_inputs(dt, cols=C):
    if dt == 'bool':
        a, b = rnd(rng.integers(0, 2, (R, cols)), 'bool'), rnd(rng.integers(0, 2, (R, cols)), 'bool')
    else:
        a, b = sample(dt, (R, cols), -3, 3), sample(dt, (R, cols), -3, 3)
    b = np.where(rng.random((R, cols)) < 0.3, a, b).astype(a.dtype)
    if dt in ('f32', 'f16', 'bf16'):
        a[0, 0], b[0, 1], a[1, 2], b[1, 3] = np.nan, np.nan, 0.0, -0.0
        a[2, 4], b[2, 5] = np.inf, -np.inf
    return a, b

scalars = {'f32': 0.1, 'f16': 0.1, 'bf16': -1.3, 'i32': 2.5, 'i8': -1.5, 'bool': 0.5}
for dt in ('f32', 'f16', 'bf16', 'i32', 'i8'):
    for mode, f in cmps.items():
        a, b = compare_inputs(dt)
        compare_case(f'tcmp_{mode}_{dt}_valid', dt, f'tcmp.{mode} %tm, %ta, %tb', a, b, f(f64(a), f64(b)), valid=(3, 20))
        s = scalars[dt]
        compare_case(f'tcmps_{mode}_{dt}_valid', dt, f'tcmps.{mode} %tm, %ta, {s}', a, None, f(f64(a), s), valid=(3, 13))
# Register-given valid sizes; a tile whose columns fill the mask's bytes (nothing kept
# but outside the valid region); scalars beyond the dtype's range.
for mode, f in cmps.items():
    a, b = compare_inputs('f32')
    compare_case(f'tcmp_{mode}_dyn', 'f32', f'tcmp.{mode} %tm, %ta, %tb', a, b, f(a, b), valid=(2, 27), regs=True)
    compare_case(f'tcmps_{mode}_dyn', 'f32', f'tcmps.{mode} %tm, %ta, -0.0', a, None, f(a, -0.0), valid=(3, 9), regs=True)
    a, b = compare_inputs('f16', 256)
    compare_case(f'tcmp_{mode}_f16_bytes', 'f16', f'tcmp.{mode} %tm, %ta, %tb', a, b, f(f64(a), f64(b)))
    compare_case(f'tcmps_{mode}_f16_inf', 'f16', f'tcmps.{mode} %tm, %ta, -Inf', a, None, f(f64(a), -np.inf))
    a, _ = compare_inputs('i32')
    a[0, :4] = [2**31 - 1, -2**31, 2**31 - 2, -2**31 + 1]
    compare_case(f'tcmps_{mode}_i32_range', 'i32', f'tcmps.{mode} %tm, %ta, 3e9', a, None, f(f64(a), 3e9), valid=(4, 31))
    compare_case(f'tcmps_{mode}_i32_max', 'i32', f'tcmps.{mode} %tm, %ta, 2147483647', a, None, f(f64(a), 2147483647.0))
    a, _ = compare_inputs('i8')
    compare_case(f'tcmps_{mode}_i8_low', 'i8', f'tcmps.{mode} %tm, %ta, -1000', a, None, f(f64(a), -1000.0))
# Integer division over a partial valid region (the rest of the destination keeps its
# bytes), odd rows, with extreme operands.
for dt, cols in [('i32', 24), ('i8', 64)]:
    rows, vr, vc = 5, 3, cols - 5
    t, bits = INT[dt]
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    a = rnd(red_rng.integers(lo, hi + 1, size=(rows, cols), dtype=np.int64), dt)
    b = rnd(red_rng.integers(lo, hi + 1, size=(rows, cols), dtype=np.int64) >> red_rng.integers(0, bits - 1, size=(rows, cols)), dt)
    b[b == 0] = -1
    a[0, :4], b[0, :4] = [lo, lo, hi, lo + 1], [-1, 1, -1, -1]
    c = Case(f'tdiv_{dt}_v{vr}x{vc}').param('a', dt, rows * cols, a).param('b', dt, rows * cols, b).param('out', dt, rows * cols)
    c.tile('ta', 'vec', dt, rows, cols).tile('tb', 'vec', dt, rows, cols).tile('to', 'vec', dt, rows, cols, f'valid {vr}x{vc}')
    c.op(f'tload %ta, %a[0; {rows}x{cols}; {cols},1]').op(f'tload %tb, %b[0; {rows}x{cols}; {cols},1]').op('tdiv %to, %ta, %tb')
    c.op(f'tstore %out[0; {rows}x{cols}; {cols},1], %to')
    want = np.zeros((rows, cols), dtype=t)
    exact = a[:vr, :vc].astype(np.int64) // b[:vr, :vc].astype(np.int64)
    exact = np.where((exact < 0) & (exact * b[:vr, :vc].astype(np.int64) != a[:vr, :vc].astype(np.int64)), exact + 1, exact)
    want[:vr, :vc] = wrap_int(exact, dt)
    c.want('out', want).write()

# --- float-to-integer conversions with a mode from f16 and bf16, over a valid region --

for src in ['f16', 'bf16']:
    x = rnd(rng.uniform(-6, 6, size=(R, C)), src)
    x.reshape(-1)[:8] = [0.5, -0.5, 1.5, -2.5, 2.0, -3.0, 0.0, -0.0]
    for mode in ['rint', 'round', 'floor', 'ceil', 'odd']:
        for dt in ['i32', 'i8']:
            c = Case(f'tcvt_{mode}_{src}_{dt}_valid').param('a', src, R * C, x).param('out', dt, R * C)
            c.tile('ta', 'vec', src, R, C).tile('to', 'vec', dt, R, C, 'valid 3x24')
            c.op(f'tload %ta, %a{FULL}').op(f'tcvt.{mode} %to, %ta').op(f'tstore %out{FULL}, %to')
            want = np.zeros((R, C), dtype=rnd(np.zeros(1), dt).dtype)
            want[:3, :24] = round_mode(x, dt, mode)[:3, :24]
            c.want('out', want).write()

with open(os.path.join(OUT, 'CASES'), 'w') as f:
    f.write('\n'.join(CASES) + '\n')
print(len(CASES), 'cases')
