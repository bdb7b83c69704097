"""Tensor-level ops. Each builds a pending result whose shape and dtype are inferred
(and checked) immediately, so a mismatch raises at the line that wrote it."""

from __future__ import annotations

from .tensor import Tensor, apply

__all__ = ["add", "mul", "matmul", "relu"]


def add(a, b) -> Tensor:
    """a + b, elementwise with numpy broadcasting."""
    return apply("add", [a, b])


def mul(a, b) -> Tensor:
    """a * b, elementwise with numpy broadcasting."""
    return apply("mul", [a, b])


def matmul(a, b, transpose_b: bool = False, transpose_a: bool = False) -> Tensor:
    """The 2-D matrix product op(a) @ op(b), where op transposes when asked.

    float16/bfloat16/float32 operands accumulate in float32 on the cube unit and give
    their own dtype; int8 gives int32."""
    return apply("matmul", [a, b], {"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b)})


def relu(x) -> Tensor:
    """max(x, 0), elementwise."""
    return apply("relu", [x])
