"""A torchvision detection / segmentation model with PyTorch's weights: its training losses on two images with
targets, and its inference outputs. ``argv[2]``: the model."""
import sys

import _harness
from _harness import record

import numpy as np
import torch
from torchvision.models import detection, segmentation

name = sys.argv[2]
dtype = getattr(torch, sys.argv[3]) if len(sys.argv) > 3 else torch.float32
small = dict(min_size=128, max_size=160)
builders = {
    "fasterrcnn_mobilenet_v3_large_fpn": lambda: detection.fasterrcnn_mobilenet_v3_large_fpn(
        num_classes=5, weights_backbone=None, **small),
    "fasterrcnn_resnet50_fpn": lambda: detection.fasterrcnn_resnet50_fpn(num_classes=5, weights_backbone=None,
                                                                         **small),
    "maskrcnn_resnet50_fpn": lambda: detection.maskrcnn_resnet50_fpn(num_classes=5, weights_backbone=None, **small),
    "retinanet_resnet50_fpn": lambda: detection.retinanet_resnet50_fpn(num_classes=5, weights_backbone=None,
                                                                       **small),
    "ssdlite320_mobilenet_v3_large": lambda: detection.ssdlite320_mobilenet_v3_large(num_classes=5,
                                                                                     weights_backbone=None),
    "fcn_resnet50": lambda: segmentation.fcn_resnet50(num_classes=5, weights_backbone=None, aux_loss=True),
    "deeplabv3_mobilenet_v3_large": lambda: segmentation.deeplabv3_mobilenet_v3_large(
        num_classes=5, weights_backbone=None, aux_loss=True),
}
torch.manual_seed(0)
model = builders[name]()
if name.startswith(("fasterrcnn", "maskrcnn")):
    # random heads score every box about alike; spread the class scores so that inference keeps a few boxes
    torch.nn.init.normal_(model.roi_heads.box_predictor.cls_score.weight, std=0.3)
if name.startswith("ssd"):
    for p in model.head.classification_head.parameters():
        torch.nn.init.normal_(p, std=0.3)
model = _harness.share_weights(name, model).to(dtype)
rng = np.random.default_rng(0)
images = [torch.tensor(rng.random((3, 120, 150)), dtype=dtype),
          torch.tensor(rng.random((3, 100, 140)), dtype=dtype)]

if name.startswith(("fcn", "deeplab")):
    x = torch.stack([torch.nn.functional.interpolate(i[None], (96, 96))[0] for i in images])
    model.eval()
    with torch.no_grad():
        record("eval", model(x))
    model.train()
    out = model(x)
    target = torch.tensor(rng.integers(0, 5, (2, 96, 96)))
    loss = torch.nn.functional.cross_entropy(out["out"], target) + \
        0.5 * torch.nn.functional.cross_entropy(out["aux"], target)
    loss.backward()
    record("loss", loss)
    record("grad", [p.grad for p in model.parameters() if p.grad is not None][-6:])
    sys.exit(0)


def target(h, w, n):
    xy = rng.uniform(0, [w * 0.6, h * 0.6], (n, 2))
    wh = rng.uniform(10, 40, (n, 2))
    t = {"boxes": torch.tensor(np.concatenate([xy, np.minimum(xy + wh, [w, h])], 1), dtype=dtype),
         "labels": torch.tensor(rng.integers(1, 5, n))}
    if name.startswith("maskrcnn"):
        masks = np.zeros((n, h, w), np.uint8)
        for k, (x1, y1, x2, y2) in enumerate(t["boxes"].numpy().astype(int)):
            masks[k, y1:y2, x1:x2] = 1
        t["masks"] = torch.tensor(masks)
    return t


targets = [target(120, 150, 3), target(100, 140, 2)]
model.train()
torch.manual_seed(1)           # the samplers draw with torch.randperm: the same stream on both sides
losses = model(images, targets)
total = sum(losses.values())
total.backward()
record("losses", {k: v for k, v in sorted(losses.items())})
grads = [p.grad for p in model.parameters() if p.grad is not None]
record("grad_last", grads[-4:])

model.eval()
with torch.no_grad():
    out = model(images)
for i, o in enumerate(out):
    # detections of equal score come in the order of each library's sort (PyTorch's is not stable), and random
    # weights leave many boxes scored alike up to the last bits, which decides which of them NMS keeps: compare the
    # 50 best-scored, by score then position
    b, sc = o["boxes"].double().numpy(), o["scores"].double().numpy()
    order = torch.tensor(np.lexsort((b[:, 3], b[:, 2], b[:, 1], b[:, 0], -np.round(sc, 6)))[:50].copy())
    record(f"detections.{i}", {k: v[order] for k, v in sorted(o.items())})
print(name, {k: round(float(v), 5) for k, v in losses.items()}, [len(o["boxes"]) for o in out])
