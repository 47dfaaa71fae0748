"""ultralytics: YOLO models built from their YAML with PyTorch's weights (raw outputs, the detection loss and its
float64 gradients), one epoch of training from the same seed (mosaic dataloader, loss, EMA, checkpoints), val
(mAP) and predict (NMS) on a checkpoint PyTorch trained, and export to ONNX run in onnxruntime.
``argv[2]``: "model:<yaml>", "train" or "checkpoint"."""
import os
import sys

import _harness
from _harness import record

os.environ.setdefault("YOLO_OFFLINE", "1")
os.environ.setdefault("YOLO_VERBOSE", "False")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "examples"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from ultralytics import YOLO  # noqa: E402

from detect_shapes import make_dataset  # noqa: E402

what = sys.argv[2]
rng = np.random.default_rng(0)

if what.startswith("model:"):
    cfg = what.split(":", 1)[1]
    torch.manual_seed(0)
    yolo = YOLO(cfg)
    model = _harness.share_weights(cfg, yolo.model)
    model.eval()
    x = torch.tensor(rng.random((2, 3, 96, 128)), dtype=torch.float32)
    with torch.no_grad():
        record("eval", model(x)[0])
    from ultralytics.cfg import get_cfg
    model = _harness.reload_state(cfg, model)     # (ultralytics' loss builds its targets in float32)
    model.args = get_cfg()
    model.train()
    batch = {"img": x, "batch_idx": torch.tensor([0.0, 0.0, 1.0]), "cls": torch.tensor([[0.0], [2.0], [1.0]]),
             "bboxes": torch.tensor([[0.3, 0.4, 0.2, 0.3], [0.7, 0.6, 0.3, 0.2], [0.5, 0.5, 0.4, 0.4]])}
    loss, items = model.loss(batch)
    loss.sum().backward()
    record("loss", loss)
    record("loss_items", items if isinstance(items, torch.Tensor) else dict(items))
    for n, p in model.named_parameters():
        if p.grad is not None:
            record(f"grad.{n}", p.grad)
    print(cfg, loss.tolist())
    sys.exit(0)

data = make_dataset(os.path.join(_harness.OUT, "shapes"), 24, 8, 96)
common = dict(imgsz=96, batch=8, device="cpu", verbose=False, plots=False)

if what == "train":
    # one epoch from ultralytics' own seeded initialisation, on both sides
    yolo = YOLO("yolov8n.yaml")
    losses = []
    yolo.add_callback("on_train_epoch_end", lambda t: losses.append(
        {k: float(v) for k, v in t.label_loss_items(t.tloss, prefix="train").items()}))
    yolo.train(data=data, epochs=1, workers=0, amp=False, seed=0, deterministic=True, val=False,
               project=os.path.join(_harness.OUT, f"runs_{_harness.SIDE}"), name="t", exist_ok=True, **common)
    record("epoch_losses", losses[0])
    ckpt = torch.load(os.path.join(_harness.OUT, f"runs_{_harness.SIDE}", "t", "weights", "last.pt"),
                      weights_only=False)
    record("checkpoint_keys", np.array(sorted(k for k in ckpt if k not in ("date", "version", "git", "train_args",
                                                                            "train_results", "license", "docs"))))
    # the EMA weights (training strips the optimizer into them), by their norms: ultralytics picks AdamW for short
    # runs, whose +-lr steps on gradients that are zero up to rounding move the odd weight either way
    ema = ckpt["model"].float().state_dict()
    record("ema_norms", torch.stack([ema[k].norm() for k in sorted(ema) if k.endswith("conv.weight")]))
    print("train", losses[0])
    sys.exit(0)

# "checkpoint": PyTorch trains a few epochs; both sides validate and predict with that checkpoint
best = os.path.join(_harness.OUT, "runs_torch", "ck", "weights", "best.pt")
if not _harness.ON_EMBER:
    YOLO("yolov8n.yaml").train(data=data, epochs=4, workers=0, amp=False, seed=0, deterministic=True,
                               project=os.path.join(_harness.OUT, "runs_torch"), name="ck", exist_ok=True, **common)
yolo = YOLO(best)
metrics = yolo.val(data=data, **common)
record("val", np.array([metrics.box.map50, metrics.box.map, metrics.box.mp, metrics.box.mr]))
for k in range(3):
    r = yolo.predict(os.path.join(_harness.OUT, "shapes", "images", "val", f"{k}.png"), imgsz=96, conf=0.001,
                     verbose=False)[0]
    record(f"predict.{k}", (r.boxes.xyxy[:20], r.boxes.conf[:20], r.boxes.cls[:20]))
onnx_file = yolo.export(format="onnx", imgsz=96, simplify=False)
import onnxruntime  # noqa: E402
session = onnxruntime.InferenceSession(onnx_file)
x = rng.random((1, 3, 96, 96)).astype(np.float32)
out = session.run(None, {session.get_inputs()[0].name: x})[0]
yolo.model.eval()
with torch.no_grad():
    eager = yolo.model(torch.tensor(x))[0].numpy()
record("onnx_vs_eager", np.array(np.abs(out - eager).max() / np.abs(eager).max()))

# the metrics val computes, on detections that do hit their targets (a barely trained model hits nothing)
from ultralytics.utils.metrics import ap_per_class, box_iou  # noqa: E402
gt = torch.tensor(np.concatenate([rng.uniform(0, 60, (30, 2)), rng.uniform(0, 60, (30, 2)) + 20], 1),
                  dtype=torch.float32)
gt[:, 2:] = torch.maximum(gt[:, 2:], gt[:, :2] + 5)
pred = gt + torch.tensor(rng.normal(0, 4, (30, 4)), dtype=torch.float32)
iou = box_iou(pred, gt)
thresholds = torch.linspace(0.5, 0.95, 10)
tp = (iou.diagonal()[:, None] >= thresholds[None]).numpy()
conf = rng.random(30)
pred_cls = rng.integers(0, 3, 30)
record("ap_per_class", [np.asarray(v) for v in ap_per_class(tp, conf, pred_cls, pred_cls.copy())[:7]])
record("box_iou", iou)
print("checkpoint ok", metrics.box.map50)
