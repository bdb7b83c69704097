#!/usr/bin/env python3
"""Writes the input and the numpy softmax of cmd/pto's softmax test.
Run from the repository root: python3 cmd/pto/testdata/gen.py"""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(7)
x = rng.normal(0, 3, size=(64, 128)).astype(np.float32)
e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
np.save(os.path.join(here, 'softmax_x.npy'), x)
np.save(os.path.join(here, 'softmax_want.npy'), (e / e.sum(axis=1, keepdims=True)).astype(np.float32))
