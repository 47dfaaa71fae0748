"""The loops of torchvision's operators, compiled by numba (``kernels.py`` calls them; with compiled
kernels switched off, the same functions run as plain Python).

Note [torchvision's arithmetic]
Each loop computes what torchvision's CPU kernel computes, in the same order and the same precision: with ``t`` the
input's scalar type (``a.dtype.type`` -- float32 or float64), every intermediate that torchvision's C++ keeps in
``T`` is cast to ``t`` here, and the few it computes in double (``1. - ly``, the rotated boxes' centre shift) are
computed in double and then cast, so float32 results round as torchvision's do. Integers that C++ converts to ``T``
(``ph * bin_size_h``) are cast explicitly: numba, like NumPy, would otherwise promote ``int * float32`` to float64.
"""
from __future__ import annotations

import math

import numpy as np

from numba import njit, prange

_jit = dict(cache=True, nogil=True, error_model="numpy")


# ----------------------------------------------------------------------------------------------------- nms
@njit(**_jit)
def nms(x1, y1, x2, y2, areas, order, iou_threshold, keep):  # pragma: no cover - compiled
    """Greedy suppression over boxes visited in ``order``; the kept indices go to ``keep``; returns how many."""
    t = areas.dtype.type
    zero = t(0)
    n = order.shape[0]
    suppressed = np.zeros(n, np.uint8)
    num = 0
    for _i in range(n):
        i = order[_i]
        if suppressed[i] == 1:
            continue
        keep[num] = i
        num += 1
        ix1, iy1, ix2, iy2, iarea = x1[i], y1[i], x2[i], y2[i], areas[i]
        for _j in range(_i + 1, n):
            j = order[_j]
            if suppressed[j] == 1:
                continue
            xx1 = x1[j] if ix1 < x1[j] else ix1
            yy1 = y1[j] if iy1 < y1[j] else iy1
            xx2 = x2[j] if x2[j] < ix2 else ix2
            yy2 = y2[j] if y2[j] < iy2 else iy2
            w = xx2 - xx1
            h = yy2 - yy1
            w = w if zero < w else zero
            h = h if zero < h else zero
            inter = w * h
            ovr = inter / (iarea + areas[j] - inter)
            if ovr > iou_threshold:
                suppressed[j] = 1
    return num


# ----------------------------------------------------------------------------------------------- roi_align
@njit(**_jit)
def _bilinear_setup(y, x, height, width, ref):  # pragma: no cover - compiled
    """Corner indices (flat in the plane) and weights of one sampling point (torchvision's
    pre_calc_for_bilinear_interpolate); all weights 0 outside the map. ``ref``: an array of the input's type."""
    t = ref.dtype.type
    zero = t(0)
    if not (y >= -1.0 and y <= height and x >= -1.0 and x <= width):
        return 0, 0, 0, 0, zero, zero, zero, zero, False
    if y <= 0:
        y = zero
    if x <= 0:
        x = zero
    y_low = int(y)
    x_low = int(x)
    if y_low >= height - 1:
        y_high = y_low = height - 1
        y = t(y_low)
    else:
        y_high = y_low + 1
    if x_low >= width - 1:
        x_high = x_low = width - 1
        x = t(x_low)
    else:
        x_high = x_low + 1
    ly = y - t(y_low)
    lx = x - t(x_low)
    hy = t(1.0 - ly)
    hx = t(1.0 - lx)
    return (y_low * width + x_low, y_low * width + x_high, y_high * width + x_low, y_high * width + x_high,
            hy * hx, hy * lx, ly * hx, ly * lx, True)


@njit(**_jit)
def _scatter_bilinear(plane, y, x, height, width, g, count):  # pragma: no cover - compiled
    """The backward of one sampling point: ``g / count`` spread over its four corners by their weights."""
    p1, p2, p3, p4, w1, w2, w3, w4, inside = _bilinear_setup(y, x, height, width, plane)
    if inside:
        plane[p1] += g * w1 / count
        plane[p2] += g * w2 / count
        plane[p3] += g * w3 / count
        plane[p4] += g * w4 / count


@njit(**_jit)
def roi_align_forward(planes, height, width, batch, start_h, start_w, bin_h, bin_w, grid_h, grid_w,
                      out):  # pragma: no cover
    """``out[k, c, ph, pw]``: the mean over the bin's sampling grid of the bilinearly interpolated input, whose
    ``(batch, channel)`` planes are the rows of ``planes`` (N * C, H * W)."""
    t = out.dtype.type
    n_rois, channels, pooled_h, pooled_w = out.shape
    for k in prange(n_rois):
        gh, gw = grid_h[k], grid_w[k]
        count = t(max(gh * gw, 1))
        n = pooled_h * pooled_w * gh * gw
        pos = np.empty((n, 4), np.int64)
        wts = np.empty((n, 4), out.dtype)
        idx = 0
        for ph in range(pooled_h):
            for pw in range(pooled_w):
                for iy in range(gh):
                    yy = start_h[k] + t(ph) * bin_h[k] + t(iy + 0.5) * bin_h[k] / t(gh)
                    for ix in range(gw):
                        xx = start_w[k] + t(pw) * bin_w[k] + t(ix + 0.5) * bin_w[k] / t(gw)
                        p1, p2, p3, p4, w1, w2, w3, w4, _ = _bilinear_setup(yy, xx, height, width, out)
                        pos[idx, 0], pos[idx, 1], pos[idx, 2], pos[idx, 3] = p1, p2, p3, p4
                        wts[idx, 0], wts[idx, 1], wts[idx, 2], wts[idx, 3] = w1, w2, w3, w4
                        idx += 1
        b = batch[k]
        per_bin = gh * gw
        for c in range(channels):
            plane = planes[b * channels + c]
            idx = 0
            for ph in range(pooled_h):
                for pw in range(pooled_w):
                    acc = t(0)
                    for s in range(per_bin):
                        acc += (wts[idx, 0] * plane[pos[idx, 0]] + wts[idx, 1] * plane[pos[idx, 1]]
                                + wts[idx, 2] * plane[pos[idx, 2]] + wts[idx, 3] * plane[pos[idx, 3]])
                        idx += 1
                    out[k, c, ph, pw] = acc / count


@njit(**_jit)
def roi_align_backward(grad, batch, start_h, start_w, bin_h, bin_w, grid_h, grid_w, planes, height,
                       width):  # pragma: no cover
    """Scatter each output bin's gradient back to the pixels its samples read, with their weights, into the
    gradient's ``(batch, channel)`` planes (rows of ``planes``); channels in parallel: two rois never write the
    same plane at once."""
    t = grad.dtype.type
    n_rois, channels, pooled_h, pooled_w = grad.shape
    for c in prange(channels):
        for k in range(n_rois):
            gh, gw = grid_h[k], grid_w[k]
            count = t(gh * gw)
            plane = planes[batch[k] * channels + c]
            for ph in range(pooled_h):
                for pw in range(pooled_w):
                    g = grad[k, c, ph, pw]
                    for iy in range(gh):
                        yy = start_h[k] + t(ph) * bin_h[k] + t(iy + 0.5) * bin_h[k] / t(gh)
                        for ix in range(gw):
                            xx = start_w[k] + t(pw) * bin_w[k] + t(ix + 0.5) * bin_w[k] / t(gw)
                            _scatter_bilinear(plane, yy, xx, height, width, g, count)


@njit(**_jit)
def ps_roi_align_forward(planes, channels, height, width, batch, start_h, start_w, bin_h, bin_w, grid_h, grid_w,
                         out, mapping):  # pragma: no cover
    """Position-sensitive RoIAlign: output channel ``c_out`` of bin ``(ph, pw)`` reads input channel
    ``(c_out * pooled_h + ph) * pooled_w + pw``."""
    t = out.dtype.type
    n_rois, channels_out, pooled_h, pooled_w = out.shape
    for k in prange(n_rois):
        gh, gw = grid_h[k], grid_w[k]
        count = t(gh * gw)
        b = batch[k]
        for c_out in range(channels_out):
            for ph in range(pooled_h):
                for pw in range(pooled_w):
                    c_in = (c_out * pooled_h + ph) * pooled_w + pw
                    plane = planes[b * channels + c_in]
                    hstart = t(ph) * bin_h[k] + start_h[k]
                    wstart = t(pw) * bin_w[k] + start_w[k]
                    acc = t(0)
                    for iy in range(gh):
                        yy = hstart + t(iy + 0.5) * bin_h[k] / t(gh)
                        for ix in range(gw):
                            xx = wstart + t(ix + 0.5) * bin_w[k] / t(gw)
                            p1, p2, p3, p4, w1, w2, w3, w4, inside = _bilinear_setup(yy, xx, height, width, out)
                            if inside:
                                acc += w1 * plane[p1] + w2 * plane[p2] + w3 * plane[p3] + w4 * plane[p4]
                    out[k, c_out, ph, pw] = acc / count
                    mapping[k, c_out, ph, pw] = c_in


@njit(**_jit)
def ps_roi_align_backward(grad, mapping, batch, start_h, start_w, bin_h, bin_w, grid_h, grid_w, planes, channels,
                          height, width):  # pragma: no cover
    t = grad.dtype.type
    n_rois, channels_out, pooled_h, pooled_w = grad.shape
    for k in range(n_rois):
        gh, gw = grid_h[k], grid_w[k]
        count = t(gh * gw)
        for c_out in range(channels_out):
            for ph in range(pooled_h):
                for pw in range(pooled_w):
                    plane = planes[batch[k] * channels + mapping[k, c_out, ph, pw]]
                    hstart = t(ph) * bin_h[k] + start_h[k]
                    wstart = t(pw) * bin_w[k] + start_w[k]
                    g = grad[k, c_out, ph, pw]
                    for iy in range(gh):
                        yy = hstart + t(iy + 0.5) * bin_h[k] / t(gh)
                        for ix in range(gw):
                            xx = wstart + t(ix + 0.5) * bin_w[k] / t(gw)
                            _scatter_bilinear(plane, yy, xx, height, width, g, count)


# ------------------------------------------------------------------------------------------------ roi_pool
@njit(**_jit)
def roi_pool_forward(inp, batch, start_h, start_w, bin_h, bin_w, out, argmax):  # pragma: no cover
    """Max over each bin's pixels (bins of the rounded box, clipped to the map); empty bins give 0 and argmax -1."""
    t = inp.dtype.type
    n_rois, channels, pooled_h, pooled_w = out.shape
    height, width = inp.shape[2], inp.shape[3]
    lowest = t(-3.4028234663852886e38)     # -FLT_MAX, as torchvision starts every bin
    for k in prange(n_rois):
        b = batch[k]
        for ph in range(pooled_h):
            for pw in range(pooled_w):
                hstart = min(max(int(math.floor(t(ph) * bin_h[k])) + start_h[k], 0), height)
                wstart = min(max(int(math.floor(t(pw) * bin_w[k])) + start_w[k], 0), width)
                hend = min(max(int(math.ceil(t(ph + 1) * bin_h[k])) + start_h[k], 0), height)
                wend = min(max(int(math.ceil(t(pw + 1) * bin_w[k])) + start_w[k], 0), width)
                empty = hend <= hstart or wend <= wstart
                for c in range(channels):
                    best = t(0) if empty else lowest
                    best_i = -1
                    for h in range(hstart, hend):
                        for w in range(wstart, wend):
                            v = inp[b, c, h, w]
                            if v > best:
                                best = v
                                best_i = h * width + w
                    out[k, c, ph, pw] = best
                    argmax[k, c, ph, pw] = best_i


@njit(**_jit)
def roi_pool_backward(grad, argmax, batch, planes):  # pragma: no cover
    n_rois, channels, pooled_h, pooled_w = grad.shape
    for c in prange(channels):
        for k in range(n_rois):
            plane = planes[batch[k] * channels + c]
            for ph in range(pooled_h):
                for pw in range(pooled_w):
                    a = argmax[k, c, ph, pw]
                    if a != -1:
                        plane[a] += grad[k, c, ph, pw]


@njit(**_jit)
def ps_roi_pool_forward(inp, batch, start_h, start_w, bin_h, bin_w, out, mapping):  # pragma: no cover
    """Position-sensitive average pooling over each bin (bins clipped to ``height - 1`` / ``width - 1`` in the
    forward, as torchvision clips them)."""
    t = inp.dtype.type
    n_rois, channels_out, pooled_h, pooled_w = out.shape
    height, width = inp.shape[2], inp.shape[3]
    for k in prange(n_rois):
        b = batch[k]
        for c_out in range(channels_out):
            for ph in range(pooled_h):
                for pw in range(pooled_w):
                    hstart = min(max(int(math.floor(t(ph) * bin_h[k])) + start_h[k], 0), height - 1)
                    wstart = min(max(int(math.floor(t(pw) * bin_w[k])) + start_w[k], 0), width - 1)
                    hend = min(max(int(math.ceil(t(ph + 1) * bin_h[k])) + start_h[k], 0), height - 1)
                    wend = min(max(int(math.ceil(t(pw + 1) * bin_w[k])) + start_w[k], 0), width - 1)
                    c_in = (c_out * pooled_h + ph) * pooled_w + pw
                    acc = t(0)
                    for h in range(hstart, hend):
                        for w in range(wstart, wend):
                            acc += inp[b, c_in, h, w]
                    area = t((hend - hstart) * (wend - wstart))
                    out[k, c_out, ph, pw] = t(0) if (hend <= hstart or wend <= wstart) else acc / area
                    mapping[k, c_out, ph, pw] = c_in


@njit(**_jit)
def ps_roi_pool_backward(grad, mapping, batch, start_h, start_w, bin_h, bin_w, grad_input):  # pragma: no cover
    """(torchvision's backward clips the bins to ``height`` / ``width``, one pixel wider than its forward.)"""
    t = grad.dtype.type
    n_rois, channels_out, pooled_h, pooled_w = grad.shape
    height, width = grad_input.shape[2], grad_input.shape[3]
    for k in range(n_rois):
        b = batch[k]
        for ph in range(pooled_h):
            for pw in range(pooled_w):
                hstart = min(max(int(math.floor(t(ph) * bin_h[k])) + start_h[k], 0), height)
                wstart = min(max(int(math.floor(t(pw) * bin_w[k])) + start_w[k], 0), width)
                hend = min(max(int(math.ceil(t(ph + 1) * bin_h[k])) + start_h[k], 0), height)
                wend = min(max(int(math.ceil(t(pw + 1) * bin_w[k])) + start_w[k], 0), width)
                empty = hend <= hstart or wend <= wstart
                area = t((hend - hstart) * (wend - wstart))
                for c_out in range(channels_out):
                    plane = grad_input[b, mapping[k, c_out, ph, pw]]
                    diff = t(0) if empty else grad[k, c_out, ph, pw] / area
                    for h in range(hstart, hend):
                        for w in range(wstart, wend):
                            plane[h, w] += diff


# ------------------------------------------------------------------------------------------ box_iou_rotated
@njit(**_jit)
def _cross(ax, ay, bx, by):  # pragma: no cover - compiled
    return ax * by - bx * ay


@njit(**_jit)
def _vertices(cx, cy, w, h, a, px, py):  # pragma: no cover - compiled
    t = type(cx)
    theta = a * 0.01745329251
    cos2 = t(math.cos(theta)) * t(0.5)
    sin2 = t(math.sin(theta)) * t(0.5)
    px[0] = cx + sin2 * h + cos2 * w
    py[0] = cy + cos2 * h - sin2 * w
    px[1] = cx - sin2 * h + cos2 * w
    py[1] = cy - cos2 * h - sin2 * w
    px[2] = t(2) * cx - px[0]
    py[2] = t(2) * cy - py[0]
    px[3] = t(2) * cx - px[1]
    py[3] = t(2) * cy - py[1]


@njit(**_jit)
def _inside(ax, ay, bx, by, ix, iy, num):  # pragma: no cover - compiled
    """Append the vertices of polygon (ax, ay) that lie inside rectangle (bx, by) (edge projections)."""
    eps = 1e-5
    abx, aby = bx[1] - bx[0], by[1] - by[0]
    dax, day = bx[0] - bx[3], by[0] - by[3]
    ab_ab = abx * abx + aby * aby
    ad_ad = dax * dax + day * day
    for i in range(4):
        apx, apy = ax[i] - bx[0], ay[i] - by[0]
        ap_ab = apx * abx + apy * aby
        ap_ad = -(apx * dax + apy * day)
        if ap_ab > -eps and ap_ad > -eps and ap_ab < ab_ab + eps and ap_ad < ad_ad + eps:
            ix[num] = ax[i]
            iy[num] = ay[i]
            num += 1
    return num


@njit(**_jit)
def _rotated_iou(b1, b2):  # pragma: no cover - compiled
    t = b1.dtype.type
    shift_x = float(b1[0] + b2[0]) / 2.0
    shift_y = float(b1[1] + b2[1]) / 2.0
    c1x, c1y = t(float(b1[0]) - shift_x), t(float(b1[1]) - shift_y)
    c2x, c2y = t(float(b2[0]) - shift_x), t(float(b2[1]) - shift_y)
    area1 = b1[2] * b1[3]
    area2 = b2[2] * b2[3]
    if area1 < 1e-14 or area2 < 1e-14:
        return 0.0
    p1x, p1y = np.empty(4, b1.dtype), np.empty(4, b1.dtype)
    p2x, p2y = np.empty(4, b1.dtype), np.empty(4, b1.dtype)
    _vertices(c1x, c1y, b1[2], b1[3], b1[4], p1x, p1y)
    _vertices(c2x, c2y, b2[2], b2[3], b2[4], p2x, p2y)
    ix, iy = np.empty(24, b1.dtype), np.empty(24, b1.dtype)
    v1x, v1y = np.empty(4, b1.dtype), np.empty(4, b1.dtype)
    v2x, v2y = np.empty(4, b1.dtype), np.empty(4, b1.dtype)
    for i in range(4):
        v1x[i], v1y[i] = p1x[(i + 1) % 4] - p1x[i], p1y[(i + 1) % 4] - p1y[i]
        v2x[i], v2y[i] = p2x[(i + 1) % 4] - p2x[i], p2y[(i + 1) % 4] - p2y[i]
    eps = 1e-5
    num = 0
    for i in range(4):          # edge-edge crossings
        for j in range(4):
            det = _cross(v2x[j], v2y[j], v1x[i], v1y[i])
            if abs(det) <= 1e-14:
                continue
            dx, dy = p2x[j] - p1x[i], p2y[j] - p1y[i]
            t1 = _cross(v2x[j], v2y[j], dx, dy) / det
            t2 = _cross(v1x[i], v1y[i], dx, dy) / det
            if t1 > -eps and t1 < 1.0 + eps and t2 > -eps and t2 < 1.0 + eps:
                ix[num] = p1x[i] + v1x[i] * t1
                iy[num] = p1y[i] + v1y[i] * t1
                num += 1
    num = _inside(p1x, p1y, p2x, p2y, ix, iy, num)     # vertices of each rectangle inside the other
    num = _inside(p2x, p2y, p1x, p1y, ix, iy, num)
    if num <= 2:
        inter = t(0)
    else:
        inter = t(_hull_area(ix, iy, num))
    return inter / (area1 + area2 - inter)


@njit(**_jit)
def _hull_area(px, py, n):  # pragma: no cover - compiled
    """The area of the convex hull of the points (Graham's scan from the lowest point, as torchvision orders it)."""
    t = px.dtype.type
    s = 0
    for i in range(1, n):
        if py[i] < py[s] or (py[i] == py[s] and px[i] < px[s]):
            s = i
    qx, qy = px[:n] - px[s], py[:n] - py[s]
    qx[0], qx[s] = qx[s], qx[0]
    qy[0], qy[s] = qy[s], qy[0]
    dist = qx * qx + qy * qy
    for i in range(1, n - 1):
        for j in range(i + 1, n):
            cp = _cross(qx[i], qy[i], qx[j], qy[j])
            if cp < -1e-6 or (abs(cp) < 1e-6 and dist[i] > dist[j]):
                qx[i], qx[j] = qx[j], qx[i]
                qy[i], qy[j] = qy[j], qy[i]
                dist[i], dist[j] = dist[j], dist[i]
    dist = qx * qx + qy * qy
    k = 1
    while k < n and not dist[k] > 1e-8:
        k += 1
    if k == n:
        return 0.0
    qx[1], qy[1] = qx[k], qy[k]
    m = 2
    for i in range(k + 1, n):
        while m > 1:
            ax, ay = qx[i] - qx[m - 2], qy[i] - qy[m - 2]
            bx, by = qx[m - 1] - qx[m - 2], qy[m - 1] - qy[m - 2]
            if ax * by >= bx * ay:
                m -= 1
            else:
                break
        qx[m], qy[m] = qx[i], qy[i]
        m += 1
    if m <= 2:
        return 0.0
    area = t(0)
    for i in range(1, m - 1):
        area += abs(_cross(qx[i] - qx[0], qy[i] - qy[0], qx[i + 1] - qx[0], qy[i + 1] - qy[0]))
    return area / 2.0


@njit(**_jit)
def box_iou_rotated(boxes1, boxes2, out):  # pragma: no cover - compiled
    for i in prange(boxes1.shape[0]):
        for j in range(boxes2.shape[0]):
            out[i, j] = _rotated_iou(boxes1[i], boxes2[j])
