"""The rest of torchvision's model zoo, eval outputs from seed 0 with each framework's own initialisation (so
``nn.init`` has to draw PyTorch's values too): classifiers, video classifiers, LR-ASPP, FCOS, Keypoint R-CNN, SSD300,
RAFT optical flow, the quantizable ResNet-18 in float. ``argv[2]``: comma-separated model names."""
import sys

import _harness  # noqa: F401  (torchvision on the oracle)
from _harness import record

import numpy as np
import torch
from torchvision import models as M

detection = dict(weights_backbone=None, min_size=128, max_size=128)
MODELS = {
    "alexnet": (M.alexnet, (1, 3, 224, 224)), "vgg11_bn": (M.vgg11_bn, (1, 3, 64, 64)),
    "googlenet": (lambda: M.googlenet(aux_logits=False, init_weights=True), (1, 3, 96, 96)),
    "inception_v3": (lambda: M.inception_v3(aux_logits=False, init_weights=True), (1, 3, 299, 299)),
    "densenet121": (M.densenet121, (1, 3, 64, 64)), "shufflenet_v2_x0_5": (M.shufflenet_v2_x0_5, (1, 3, 64, 64)),
    "mnasnet0_5": (M.mnasnet0_5, (1, 3, 64, 64)), "squeezenet1_1": (M.squeezenet1_1, (1, 3, 64, 64)),
    "efficientnet_v2_s": (M.efficientnet_v2_s, (1, 3, 64, 64)), "maxvit_t": (M.maxvit_t, (1, 3, 224, 224)),
    "swin_v2_t": (M.swin_v2_t, (1, 3, 64, 64)), "wide_resnet50_2": (M.wide_resnet50_2, (1, 3, 64, 64)),
    "resnext50_32x4d": (M.resnext50_32x4d, (1, 3, 64, 64)), "regnet_x_400mf": (M.regnet_x_400mf, (1, 3, 64, 64)),
    "mobilenet_v2": (M.mobilenet_v2, (1, 3, 64, 64)), "r3d_18": (M.video.r3d_18, (1, 3, 4, 56, 56)),
    "r2plus1d_18": (M.video.r2plus1d_18, (1, 3, 4, 56, 56)), "s3d": (M.video.s3d, (1, 3, 16, 224, 224)),
    "mvit_v2_s": (M.video.mvit_v2_s, (1, 3, 16, 224, 224)), "swin3d_t": (M.video.swin3d_t, (1, 3, 4, 64, 64)),
    "lraspp_mobilenet_v3_large": (lambda: M.segmentation.lraspp_mobilenet_v3_large(weights_backbone=None),
                                  (1, 3, 64, 64)),
    "fcos_resnet50_fpn": (lambda: M.detection.fcos_resnet50_fpn(**detection), "detection"),
    "keypointrcnn_resnet50_fpn": (lambda: M.detection.keypointrcnn_resnet50_fpn(**detection), "detection"),
    "ssd300_vgg16": (lambda: M.detection.ssd300_vgg16(weights_backbone=None), "detection"),
    "raft_small": (M.optical_flow.raft_small, "flow"),
    "quantizable_resnet18": (lambda: M.quantization.resnet18(quantize=False), (1, 3, 64, 64)),
}


def _canonical_order(out: dict) -> dict:
    """Detections in score order, with detections whose scores tie to within 1e-4 (two boxes of the same object a
    rounding apart, whose order the last bits of either framework's arithmetic decide) ordered by what else they
    carry: each group by its labels and keypoint scores."""
    scores = out["scores"].numpy().astype(np.float64)
    if not len(scores):
        return out
    extra = [out[k].numpy().reshape(len(scores), -1).astype(np.float64) for k in ("labels", "keypoints_scores")
             if k in out]
    order, i = [], 0
    while i < len(scores):
        j = i + 1
        while j < len(scores) and abs(scores[j] - scores[j - 1]) <= 1e-4:
            j += 1
        group = list(range(i, j))
        group.sort(key=lambda r: tuple(round(float(v), 2) for e in extra for v in e[r]))
        order += group
        i = j
    index = torch.tensor(order, dtype=torch.int64)
    return {k: v[index] for k, v in out.items()}


for name in sys.argv[2].split(","):
    build, shape = MODELS[name]
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    model = build().eval()
    with torch.no_grad():
        if shape == "detection":
            out = model([torch.tensor(rng.random((3, 128, 128)), dtype=torch.float32)])[0]
            out = _canonical_order({k: v for k, v in out.items() if k in ("scores", "labels", "keypoints_scores")})
        elif shape == "flow":
            a, b = (torch.tensor(rng.standard_normal((1, 3, 128, 128)), dtype=torch.float32) for _ in range(2))
            out = model(a, b, num_flow_updates=3)[-1]
        else:
            out = model(torch.tensor(rng.standard_normal(shape), dtype=torch.float32))
            out = out["out"] if isinstance(out, dict) else out
    record(name, out)
