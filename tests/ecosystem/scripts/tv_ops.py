"""torchvision.ops: every compiled operator (values and gradients, float32 and float64) and the Python layers built
on them, on the same inputs."""
import _harness
from _harness import record

import numpy as np
import torch
import torchvision
from torchvision import ops

rng = np.random.default_rng(0)


def t(a, dtype=torch.float32, grad=False):
    x = torch.tensor(np.asarray(a), dtype=dtype)
    return x.requires_grad_(grad)


def boxes(n, size=60.0, dtype=torch.float32):
    xy = rng.uniform(0, size, (n, 2))
    wh = rng.uniform(1, size / 2, (n, 2))
    return t(np.concatenate([xy, xy + wh], 1), dtype)


def rois(n, batch, size, dtype=torch.float32):
    b = boxes(n, size, dtype)
    idx = t(rng.integers(0, batch, (n, 1)), dtype)
    return torch.cat([idx, b], 1)


record("has_ops", torchvision.extension._has_ops())

# --- nms, batched_nms, box_iou_rotated
for dtype in (torch.float32, torch.float64):
    name = str(dtype).split(".")[-1]
    bx, sc = boxes(200, dtype=dtype), t(rng.random(200), dtype)
    sc[5] = sc[6]                                           # a tie
    record(f"nms.{name}", ops.nms(bx, sc, 0.5))
    record(f"nms_low.{name}", ops.nms(bx, sc, 0.1))
    record(f"batched_nms.{name}", ops.batched_nms(bx, sc, t(rng.integers(0, 4, 200), torch.int64), 0.4))
    rb = t(np.concatenate([rng.uniform(0, 50, (30, 2)), rng.uniform(2, 20, (30, 2)), rng.uniform(-90, 90, (30, 1))],
                          1), dtype)
    rb[3] = rb[2]
    record(f"box_iou_rotated.{name}", ops.box_iou(rb, rb[:11], fmt="cxcywhr"))
    record(f"box_iou_xywhr.{name}", ops.box_iou(rb, rb[:4], fmt="xywhr"))
record("nms_empty", ops.nms(torch.zeros(0, 4), torch.zeros(0), 0.5))
# quantized boxes and features (torchvision's qnms / qroi_align on the integer representations)
qb = torch.quantize_per_tensor(boxes(40), 0.5, 0, torch.quint8)
qs = torch.quantize_per_tensor(t(rng.random(40)), 0.01, 0, torch.quint8)
record("qnms", ops.nms(qb, qs, 0.5))
qx = torch.quantize_per_tensor(t(rng.standard_normal((1, 4, 12, 12))), 0.05, 128, torch.quint8)
qr = torch.quantize_per_tensor(torch.cat([torch.zeros(5, 1), boxes(5, 10)], 1), 0.125, 0, torch.quint8)
qy = ops.roi_align(qx, qr, 3, 1.0, 2, True)
record("qroi_align", (qy.int_repr(), torch.tensor(qy.q_scale()), torch.tensor(qy.q_zero_point())))

# --- box utilities (Python on top of tensor ops)
b1, b2 = boxes(7), boxes(5)
for fn in ("box_iou", "generalized_box_iou", "distance_box_iou", "complete_box_iou"):
    record(fn, getattr(ops, fn)(b1, b2))
record("box_area", ops.box_area(b1))
masks = t(rng.random((3, 10, 12)) > 0.7, torch.bool)
record("masks_to_boxes", ops.masks_to_boxes(masks))
record("box_convert", ops.box_convert(b1, "xyxy", "cxcywh"))
record("clip_boxes", ops.clip_boxes_to_image(b1 * 2, (50, 40)))
record("remove_small", ops.remove_small_boxes(b1, 10.0))
logits, targets = t(rng.standard_normal((6, 3)), grad=True), t(rng.integers(0, 2, (6, 3)))
loss = ops.sigmoid_focal_loss(logits, targets, reduction="mean")
loss.backward()
record("focal", (loss, logits.grad))
g1, g2 = boxes(6).requires_grad_(True), boxes(6)
loss = ops.generalized_box_iou_loss(g1, g2, reduction="sum") + ops.complete_box_iou_loss(g1, g2, reduction="sum")
loss.backward()
record("box_losses", (loss, g1.grad))

# --- roi_align / roi_pool / ps_roi_align / ps_roi_pool: values and gradients
for dtype in (torch.float32, torch.float64):
    name = str(dtype).split(".")[-1]
    x = t(rng.standard_normal((2, 8, 20, 24)), dtype, grad=True)
    r = rois(12, 2, 30, dtype)
    r[0, 1:] = t([-5.0, -4.0, 3.0, 2.5], dtype)               # partly outside the map
    r[1, 1:] = t([10.0, 10.0, 10.0, 10.0], dtype)             # empty
    for aligned in (False, True):
        for ratio in (-1, 0, 2):
            x.grad = None
            y = ops.roi_align(x, r, (5, 4), spatial_scale=0.6, sampling_ratio=ratio, aligned=aligned)
            (y * t(rng.standard_normal(y.shape), dtype)).sum().backward()
            record(f"roi_align.{name}.{aligned}.{ratio}", (y, x.grad))
    x.grad = None
    y = ops.roi_pool(x, r, (3, 3), 0.5)
    (y * t(rng.standard_normal(y.shape), dtype)).sum().backward()
    record(f"roi_pool.{name}", (y, x.grad))
    xp = t(rng.standard_normal((2, 18, 16, 16)), dtype, grad=True)
    for fn, kw in ((ops.ps_roi_align, {"sampling_ratio": 2}), (ops.ps_roi_align, {"sampling_ratio": -1}),
                   (ops.ps_roi_pool, {})):
        xp.grad = None
        y = fn(xp, r, (3, 3), 0.5, **kw)
        (y * t(rng.standard_normal(y.shape), dtype)).sum().backward()
        record(f"{fn.__name__}.{name}.{kw.get('sampling_ratio')}", (y, xp.grad))
    # roi lists instead of a (K, 5) tensor
    y = ops.roi_align(x, [r[:4, 1:], r[4:9, 1:]], 3, 0.5, 2)
    record(f"roi_align_list.{name}", y)

# --- deform_conv2d: offsets, masks, groups, strides; gradients for every input
for dtype in (torch.float32, torch.float64):
    name = str(dtype).split(".")[-1]
    for groups, ogroups, use_mask, stride, pad, dil in ((1, 1, False, 1, 1, 1), (2, 2, True, 2, 0, 1),
                                                         (1, 2, True, 1, 2, 2)):
        x = t(rng.standard_normal((2, 4, 9, 8)), dtype, grad=True)
        w = t(rng.standard_normal((6, 4 // groups, 3, 3)) * 0.3, dtype, grad=True)
        bias = t(rng.standard_normal(6), dtype, grad=True)
        oh = (9 + 2 * pad - dil * 2 - 1) // stride + 1
        ow = (8 + 2 * pad - dil * 2 - 1) // stride + 1
        off = t(rng.standard_normal((2, 2 * ogroups * 9, oh, ow)) * 2.0, dtype, grad=True)
        mask = t(rng.random((2, ogroups * 9, oh, ow)), dtype, grad=True) if use_mask else None
        y = ops.deform_conv2d(x, off, w, bias, stride=stride, padding=pad, dilation=dil, mask=mask)
        (y * t(rng.standard_normal(y.shape), dtype)).sum().backward()
        key = f"deform.{name}.{groups}.{ogroups}.{use_mask}"
        record(key, (y, x.grad, w.grad, bias.grad, off.grad))
        if use_mask:
            record(f"{key}.mask", mask.grad)
layer = ops.DeformConv2d(4, 6, 3, padding=1)
_harness.share_weights("deform_layer", layer)
record("DeformConv2d", layer(t(rng.standard_normal((1, 4, 7, 7))), t(rng.standard_normal((1, 18, 7, 7)))))

# --- layers built on the operators
torch.manual_seed(0)
pooler = ops.MultiScaleRoIAlign(["feat1", "feat2"], 5, 2)
feats = {"feat1": t(rng.standard_normal((2, 4, 32, 32))), "feat2": t(rng.standard_normal((2, 4, 16, 16)))}
props = [boxes(6, 100), boxes(4, 100)]
record("MultiScaleRoIAlign", pooler(feats, props, [(128, 128), (120, 128)]))
fpn = ops.FeaturePyramidNetwork([4, 8], 6)
_harness.share_weights("fpn", fpn)
out = fpn({"a": t(rng.standard_normal((1, 4, 16, 16))), "b": t(rng.standard_normal((1, 8, 8, 8)))})
record("FPN", list(out.values()))
record("misc", (ops.Conv2dNormActivation(3, 4).eval()(torch.zeros(1, 3, 5, 5)).shape,
                ops.stochastic_depth(torch.ones(4, 3), 0.5, "row", training=False)))
print("ok")
