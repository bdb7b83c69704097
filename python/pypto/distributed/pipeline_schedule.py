"""The order in which each pipeline stage runs its micro-batches' forward and backward
passes, by schedule name.

A schedule is, per chip, a list of steps ("F" or "B", chunk, micro-batch); chunk c of
the model runs on chip c % p (p chips, v chunks each: chunks 0..p*v-1).

- gpipe: every forward, then every backward (GPipe): each chip holds all m
  micro-batches' activations at once.
- 1f1b: chip s runs p-s-1 warm-up forwards, then alternates one forward and one
  backward, then drains the backwards (PipeDream-flush, Megatron's non-interleaved
  schedule): at most p-s micro-batches in flight on chip s.
- interleaved_1f1b: Megatron's interleaved schedule over v chunks per chip: forwards
  go chunk by chunk in groups of p micro-batches, (p-s-1)*2 + (v-1)*p warm-up steps,
  then one forward and one backward at a time; the bubble shrinks v times.
Forward-only runs (inference) take every schedule's forward steps in its order.
"""

from __future__ import annotations


def _interleaved_chunk(k: int, p: int, v: int, forward: bool) -> tuple:
    """(virtual chunk on the chip, micro-batch) of a chip's k-th forward or backward."""
    group = (k // p) % v
    vc = group if forward else v - 1 - group
    return vc, (k // (p * v)) * p + k % p


def chip_steps(schedule: str, p: int, v: int, m: int, s: int, train: bool) -> list:
    """Chip s's steps, in order: ("F" | "B", model chunk, micro-batch)."""
    if schedule == "interleaved_1f1b":
        fwd = [_interleaved_chunk(k, p, v, True) for k in range(m * v)]
        bwd = [_interleaved_chunk(k, p, v, False) for k in range(m * v)]
        fwd = [("F", vc * p + s, j) for vc, j in fwd]
        bwd = [("B", vc * p + s, j) for vc, j in bwd]
        warm = min((p - s - 1) * 2 + (v - 1) * p, m * v)
    else:
        fwd = [("F", s, j) for j in range(m)]
        bwd = [("B", s, j) for j in range(m)]
        warm = m if schedule == "gpipe" else min(p - s - 1, m)
    if not train:
        return fwd
    steps = fwd[:warm]
    rest = len(fwd) - warm
    for i in range(rest):
        steps += [fwd[warm + i], bwd[i]]
    return steps + bwd[rest:]
