"""Fits the erfc polynomial of lower/vecbody_special.go (erfcCoeffs): least squares, in
t - 0.6 with t = 1/(1 + z/2), of log(erfc(z) / t) + z**2 over z in [0, 10.5], against
Python's float64 math.erfc. Prints the coefficients (constant term first) rounded to
fp32. Run: python lower/testdata/fit_erfc.py"""

import math

import numpy as np

z = np.linspace(0, 10.5, 400001)
t = 1 / (1 + z / 2)
h = np.array([math.log(math.erfc(v) / tt) + v * v for v, tt in zip(z, t)])
fit = np.polynomial.Polynomial.fit(t - 0.6, h, 11, domain=[1 / 6.25 - 0.6, 0.4]).convert()
print(", ".join(repr(float(np.float32(c))) for c in fit.coef))
print("max error in float64:", np.abs(fit(t - 0.6) - h).max())
