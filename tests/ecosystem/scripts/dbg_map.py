import _harness
import numpy as np, torch
from torchmetrics.detection import MeanAveragePrecision
rng = np.random.default_rng(0)
m = MeanAveragePrecision(iou_type="bbox", class_metrics=True)
for _ in range(4):
    n = int(rng.integers(2, 6))
    xy = rng.uniform(0, 80, (n, 2))
    gt = torch.tensor(np.concatenate([xy, xy + rng.uniform(10, 40, (n, 2))], 1), dtype=torch.float32)
    labels = torch.tensor(rng.integers(0, 3, n))
    det = gt[: n - 1] + torch.tensor(rng.normal(0, 3, (n - 1, 4)), dtype=torch.float32)
    extra = torch.tensor(np.concatenate([xy[:1] + 20, xy[:1] + 45], 1), dtype=torch.float32)
    m.update([{"boxes": torch.cat([det, extra]), "scores": torch.tensor(rng.random(n), dtype=torch.float32),
               "labels": torch.cat([labels[: n - 1], labels[:1]])}], [{"boxes": gt, "labels": labels}])
coco_preds, coco_target = m._get_coco_datasets(average="macro")
import json
print(json.dumps(coco_preds.dataset["annotations"][:3])[:600])
print(m.compute()["map"])
