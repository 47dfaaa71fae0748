"""Vision libraries, ember against PyTorch: torchvision's resnet18 and ultralytics' YOLOv8n, inference and a training
step, the libraries' own model code on each framework, each in a process of its own.

    python -m bench.vision [--quick] [--rounds 3] [--blocks 5] [--only TEXT] [--markdown]

- resnet18 inference: a batch of 8 224x224 images, eval mode, no grad;
- resnet18 training step: a batch of 16 112x112 images, cross entropy, SGD with momentum;
- YOLOv8n inference: one 640x640 image, the raw head outputs (before NMS);
- YOLOv8n training step: a batch of 8 320x320 images with 3 boxes each, ultralytics' detection loss, SGD.

On the ember side the child makes ember stand in for torch before importing the library, as ``python -m ember``
does; on the PyTorch side torchvision's compiled library is made loadable on the CPU build
(``tools/torchvision_oracle.py``). Needs torchvision and ultralytics (ember's test extra).
"""
from __future__ import annotations

import os

import numpy as np

from bench._timing import Bench, Workload, run


def _import(lib, name):
    """The library ``name`` running on ``lib``."""
    import importlib
    if lib.__name__ == "ember":
        lib.install_as_torch()
    else:
        from tools.torchvision_oracle import preload_cuda_stubs
        preload_cuda_stubs()
    os.environ.setdefault("YOLO_OFFLINE", "1")
    os.environ.setdefault("YOLO_VERBOSE", "False")
    return importlib.import_module(name)


def _images(lib, n, size):
    return lib.tensor(np.random.default_rng(0).standard_normal((n, 3, size, size)).astype(np.float32))


def resnet18_infer(lib, quick):
    tv = _import(lib, "torchvision")
    lib.manual_seed(0)
    model = tv.models.resnet18().eval()
    x = _images(lib, 1 if quick else 8, 64 if quick else 224)

    def step():
        with lib.no_grad():
            return model(x)
    return step


def resnet18_train(lib, quick):
    tv = _import(lib, "torchvision")
    lib.manual_seed(0)
    model = tv.models.resnet18(num_classes=10)
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = _images(lib, 2 if quick else 16, 64 if quick else 112)
    y = lib.tensor(np.arange(x.shape[0]) % 10)

    def step():
        opt.zero_grad()
        lib.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return step


def _yolo(lib):
    ultralytics = _import(lib, "ultralytics")
    lib.manual_seed(0)
    return ultralytics.YOLO("yolov8n.yaml").model


def yolov8n_infer(lib, quick):
    model = _yolo(lib).eval()
    x = _images(lib, 1, 128 if quick else 640)

    def step():
        with lib.no_grad():
            return model(x)
    return step


def yolov8n_train(lib, quick):
    from ultralytics.cfg import get_cfg
    model = _yolo(lib)
    model.args = get_cfg()
    model.train()
    n = 2 if quick else 8
    x = _images(lib, n, 128 if quick else 320)
    rng = np.random.default_rng(1)
    boxes = np.concatenate([rng.uniform(0.2, 0.8, (3 * n, 2)), rng.uniform(0.05, 0.3, (3 * n, 2))], 1)
    batch = {"img": x, "batch_idx": lib.tensor(np.repeat(np.arange(n), 3).astype(np.float32)),
             "cls": lib.tensor(rng.integers(0, 80, (3 * n, 1)).astype(np.float32)),
             "bboxes": lib.tensor(boxes.astype(np.float32))}
    opt = lib.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)

    def step():
        opt.zero_grad()
        loss, _ = model.loss(batch)
        loss.sum().backward()
        opt.step()
    return step


BENCH = Bench(__name__, __doc__, {
    "resnet18 inference 8x3x224x224": Workload(resnet18_infer, number=1, warm=1),
    "resnet18 training step 16x3x112x112": Workload(resnet18_train, number=1, warm=2),
    "YOLOv8n inference 1x3x640x640": Workload(yolov8n_infer, number=1, warm=2),
    "YOLOv8n training step 8x3x320x320": Workload(yolov8n_train, number=1, warm=2),
}, blocks=5, rounds=3)

if __name__ == "__main__":
    run(BENCH)
