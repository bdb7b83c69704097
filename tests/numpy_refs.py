"""Direct numpy references of the convolution and pooling ops (float64 loops, written
from the definitions), shared by the tests that check them."""

import numpy as np


def np_conv2d(x, w, b, stride, pads, dilation, groups):
    """Direct convolution in float64: pads (top, bottom, left, right)."""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pads[0], pads[1]), (pads[2], pads[3])))
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    sh, sw = stride
    dh, dw = dilation
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (wd - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for u in range(kh):
            for v in range(kw):
                patch = x[:, g * cg:(g + 1) * cg, u * dh:u * dh + sh * (oh - 1) + 1:sh, v * dw:v * dw + sw * (ow - 1) + 1:sw]
                out[:, oc] += np.einsum("nchw,c->nhw", patch, w[oc, :, u, v].astype(np.float64))
        if b is not None:
            out[:, oc] += b[oc]
    return out


def np_pool(x, k, s, pads, mode, count_include_pad=True):
    n, c, h, w = x.shape
    oh = (h + pads[0] + pads[1] - k[0]) // s[0] + 1
    ow = (w + pads[2] + pads[3] - k[1]) // s[1] + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            y0, x0 = i * s[0] - pads[0], j * s[1] - pads[2]
            win = x[:, :, max(y0, 0):min(y0 + k[0], h), max(x0, 0):min(x0 + k[1], w)].astype(np.float64)
            if mode == "max":
                out[:, :, i, j] = win.max(axis=(2, 3))
            else:
                cnt = win.shape[2] * win.shape[3]
                if count_include_pad:
                    cnt = (min(y0 + k[0], h + pads[1]) - y0) * (min(x0 + k[1], w + pads[3]) - x0)
                out[:, :, i, j] = win.sum(axis=(2, 3)) / cnt
    return out
