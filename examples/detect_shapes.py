"""Train a YOLO object detector with ultralytics on ember: a YOLOv8n built from ultralytics' own model YAML (nothing
is downloaded) learns to find circles, squares and triangles in a generated dataset of coloured shapes.

    python examples/detect_shapes.py [--epochs 20] [--train 192] [--val 32] [--imgsz 128] [--out ./shapes-out]
                                     [--workers 2] [--pytorch]

ultralytics is a PyTorch library: the script makes ember stand in for torch before importing it (``--pytorch`` runs
the same program on PyTorch, for comparison). It prints the training losses and the validation mAP50 of every
epoch, then the final validation metrics, and writes ``predictions.png`` (predicted boxes on validation images) to
the output folder. Needs ``pip install ultralytics`` (it is in ember's test extra).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

SHAPES = ("circle", "square", "triangle")


def make_dataset(root: str, n_train: int, n_val: int, size: int, seed: int = 0) -> str:
    """Images of 1-3 coloured shapes on a dark noisy background, with YOLO labels (class cx cy w h, normalised);
    returns the dataset's YAML."""
    from PIL import Image, ImageDraw
    rng = np.random.default_rng(seed)
    for split, n in (("train", n_train), ("val", n_val)):
        os.makedirs(os.path.join(root, "images", split), exist_ok=True)
        os.makedirs(os.path.join(root, "labels", split), exist_ok=True)
        for k in range(n):
            img = Image.fromarray(rng.integers(0, 60, (size, size, 3)).astype(np.uint8))
            draw = ImageDraw.Draw(img)
            lines = []
            for _ in range(int(rng.integers(1, 4))):
                cls = int(rng.integers(0, 3))
                w = int(rng.integers(size // 6, size // 3))
                x0, y0 = int(rng.integers(0, size - w)), int(rng.integers(0, size - w))
                color = tuple(int(v) for v in rng.integers(100, 256, 3))
                if cls == 0:
                    draw.ellipse([x0, y0, x0 + w, y0 + w], fill=color)
                elif cls == 1:
                    draw.rectangle([x0, y0, x0 + w, y0 + w], fill=color)
                else:
                    draw.polygon([(x0 + w / 2, y0), (x0, y0 + w), (x0 + w, y0 + w)], fill=color)
                cx, cy, side = (x0 + w / 2) / size, (y0 + w / 2) / size, w / size
                lines.append(f"{cls} {cx:.6f} {cy:.6f} {side:.6f} {side:.6f}")
            img.save(os.path.join(root, "images", split, f"{k}.png"))
            with open(os.path.join(root, "labels", split, f"{k}.txt"), "w") as f:
                f.write("\n".join(lines) + "\n")
    yaml_path = os.path.join(root, "data.yaml")
    with open(yaml_path, "w") as f:
        f.write(f"path: {root}\ntrain: images/train\nval: images/val\nnames:\n")
        f.writelines(f"  {i}: {name}\n" for i, name in enumerate(SHAPES))
    return yaml_path


def draw_predictions(model, images: list[str], path: str, imgsz: int, conf: float) -> int:
    """The predicted boxes (confidence >= ``conf``) on ``images``, side by side, saved as a PNG; returns how many
    boxes it drew."""
    from PIL import Image, ImageDraw
    colors = {0: (255, 80, 80), 1: (80, 255, 80), 2: (80, 160, 255)}
    tiles, total = [], 0
    for file in images:
        result = model.predict(file, imgsz=imgsz, conf=conf, verbose=False)[0]
        img = Image.open(file).convert("RGB").resize((imgsz * 2, imgsz * 2))
        draw = ImageDraw.Draw(img)
        for (x1, y1, x2, y2), cls, score in zip(result.boxes.xyxy.tolist(), result.boxes.cls.tolist(),
                                                result.boxes.conf.tolist()):
            draw.rectangle([x1 * 2, y1 * 2, x2 * 2, y2 * 2], outline=colors[int(cls)], width=2)
            draw.text((x1 * 2 + 2, y1 * 2 + 1), f"{SHAPES[int(cls)]} {score:.2f}", fill=colors[int(cls)])
            total += 1
        tiles.append(img)
    sheet = Image.new("RGB", (sum(t.width for t in tiles), tiles[0].height))
    x = 0
    for t in tiles:
        sheet.paste(t, (x, 0))
        x += t.width
    sheet.save(path)
    return total


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--train", type=int, default=192, help="training images")
    p.add_argument("--val", type=int, default=32, help="validation images")
    p.add_argument("--imgsz", type=int, default=128)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--workers", type=int, default=2, help="DataLoader worker processes")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--conf", type=float, default=0.2, help="confidence threshold of the drawn predictions")
    p.add_argument("--out", default="./shapes-out")
    p.add_argument("--pytorch", action="store_true", help="run on PyTorch instead of ember")
    args = p.parse_args(argv)

    if not args.pytorch:
        import ember
        ember.install_as_torch()
    else:   # PyPI's torchvision links CUDA libraries a CPU build of torch lacks: stand-ins from this repository
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        from tools.torchvision_oracle import preload_cuda_stubs
        preload_cuda_stubs()
    os.environ.setdefault("YOLO_OFFLINE", "1")                 # never reach for the network
    os.environ.setdefault("YOLO_VERBOSE", "False")             # this script prints its own progress
    out = os.path.abspath(args.out)
    os.environ.setdefault("YOLO_CONFIG_DIR", os.path.join(out, "ultralytics-config"))
    try:
        from ultralytics import YOLO
    except ImportError:
        sys.exit("this example needs ultralytics: pip install ultralytics")
    import torch

    data = make_dataset(os.path.join(out, "shapes"), args.train, args.val, args.imgsz, args.seed)
    print(f"torch {torch.__version__}: {args.train} training and {args.val} validation images of {args.imgsz}px")
    model = YOLO("yolov8n.yaml")                               # ultralytics' YAML: random initial weights
    start = time.time()

    reported = set()

    def report(trainer):
        if trainer.epoch in reported or trainer.epoch >= trainer.epochs:   # the final validation reports again
            return
        reported.add(trainer.epoch)
        losses = trainer.label_loss_items(trainer.tloss, prefix="train")
        text = "  ".join(f"{k.split('/')[1]} {float(v):.3f}" for k, v in losses.items())
        print(f"epoch {trainer.epoch + 1:3d}  {text}  mAP50 {trainer.metrics.get('metrics/mAP50(B)', 0.0):.3f}  "
              f"({time.time() - start:.0f}s)", flush=True)
    model.add_callback("on_fit_epoch_end", report)
    model.train(data=data, epochs=args.epochs, imgsz=args.imgsz, batch=args.batch, workers=args.workers,
                device="cpu", amp=False, plots=False, seed=args.seed, deterministic=True, project=out, name="train",
                exist_ok=True, verbose=False)
    best = YOLO(os.path.join(out, "train", "weights", "best.pt"))     # the checkpoint training kept
    metrics = best.val(data=data, imgsz=args.imgsz, batch=args.batch, plots=False, verbose=False)
    print(f"final validation: mAP50 {metrics.box.map50:.3f}  mAP50-95 {metrics.box.map:.3f}  "
          f"precision {metrics.box.mp:.3f}  recall {metrics.box.mr:.3f}")
    val_dir = os.path.join(out, "shapes", "images", "val")
    images = [os.path.join(val_dir, f"{k}.png") for k in range(min(4, args.val))]
    png = os.path.join(out, "predictions.png")
    boxes = draw_predictions(best, images, png, args.imgsz, args.conf)
    print(f"wrote {png} ({boxes} boxes on {len(images)} images) in {time.time() - start:.0f}s")


if __name__ == "__main__":
    main()
