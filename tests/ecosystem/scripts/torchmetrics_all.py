"""torchmetrics: classification, regression and detection metrics through update / compute / forward, and a
MetricCollection, on the same batches."""
import _harness  # noqa: F401 - first: torchvision loads on the oracle
from _harness import record

import numpy as np
import torch
import torchmetrics
from torchmetrics import classification as C, regression as R

rng = np.random.default_rng(0)
batches = [(torch.tensor(rng.random((16, 4)), dtype=torch.float32).softmax(-1), torch.tensor(rng.integers(0, 4, 16)))
           for _ in range(3)]

metrics = {
    "acc": C.MulticlassAccuracy(num_classes=4), "acc_micro": C.MulticlassAccuracy(num_classes=4, average="micro"),
    "f1": C.MulticlassF1Score(num_classes=4), "precision": C.MulticlassPrecision(num_classes=4, average="weighted"),
    "recall": C.MulticlassRecall(num_classes=4, average=None), "auroc": C.MulticlassAUROC(num_classes=4),
    "ap": C.MulticlassAveragePrecision(num_classes=4), "confmat": C.MulticlassConfusionMatrix(num_classes=4),
    "cohen": C.MulticlassCohenKappa(num_classes=4), "mcc": C.MulticlassMatthewsCorrCoef(num_classes=4),
    "calib": C.MulticlassCalibrationError(num_classes=4), "top2": C.MulticlassAccuracy(num_classes=4, top_k=2),
    "specificity": C.MulticlassSpecificity(num_classes=4), "stat": C.MulticlassStatScores(num_classes=4),
}
for name, m in metrics.items():
    steps = [m(p, t) for p, t in batches]            # forward: this batch's value, and accumulate
    record(f"{name}.forward", steps)
    record(f"{name}.compute", m.compute())
    m.reset()
    m.update(*batches[0])
    record(f"{name}.after_reset", m.compute())

# binary and multilabel
bp = torch.tensor(rng.random(40), dtype=torch.float32)
bt = torch.tensor(rng.integers(0, 2, 40))
for name, m in {"bin_acc": C.BinaryAccuracy(), "bin_auroc": C.BinaryAUROC(), "bin_f1": C.BinaryF1Score(),
                "bin_roc": C.BinaryROC(thresholds=11), "bin_pr": C.BinaryPrecisionRecallCurve(thresholds=7)}.items():
    m.update(bp, bt)
    record(name, m.compute())
mp = torch.tensor(rng.random((20, 5)), dtype=torch.float32)
mt = torch.tensor(rng.integers(0, 2, (20, 5)))
record("multilabel", [C.MultilabelAccuracy(num_labels=5)(mp, mt), C.MultilabelF1Score(num_labels=5)(mp, mt),
                      C.MultilabelAveragePrecision(num_labels=5)(mp, mt)])

# regression
yp = torch.tensor(rng.standard_normal(50), dtype=torch.float32)
yt = yp * 0.7 + torch.tensor(rng.standard_normal(50), dtype=torch.float32) * 0.3
for name, m in {"mse": R.MeanSquaredError(), "rmse": R.MeanSquaredError(squared=False), "mae": R.MeanAbsoluteError(),
                "r2": R.R2Score(), "pearson": R.PearsonCorrCoef(), "spearman": R.SpearmanCorrCoef(),
                "mape": R.MeanAbsolutePercentageError(), "evar": R.ExplainedVariance(),
                "kendall": R.KendallRankCorrCoef(), "logcosh": R.LogCoshError()}.items():
    for k in range(0, 50, 20):
        m.update(yp[k:k + 20], yt[k:k + 20])
    record(name, m.compute())

cos = R.CosineSimilarity(reduction="mean")
cos.update(yp.reshape(10, 5), yt.reshape(10, 5))
record("cos", cos.compute())

# a collection, with compute groups
coll = torchmetrics.MetricCollection([C.MulticlassAccuracy(num_classes=4), C.MulticlassPrecision(num_classes=4),
                                      C.MulticlassRecall(num_classes=4)], prefix="val_")
for p, t in batches:
    coll.update(p, t)
out = coll.compute()
record("collection", {k: v for k, v in sorted(out.items())})
record("collection_keys", np.array(sorted(out)))

# aggregation and running metrics
mean = torchmetrics.MeanMetric()
for v in (1.0, 2.5, torch.tensor([3.0, 4.0])):
    mean.update(v)
record("mean_metric", mean.compute())

# detection: IoU family on boxes (torchvision's box ops underneath)
from torchmetrics.detection import CompleteIntersectionOverUnion, GeneralizedIntersectionOverUnion, \
    IntersectionOverUnion  # noqa: E402

preds = [{"boxes": torch.tensor([[10.0, 10.0, 50.0, 60.0], [30.0, 5.0, 70.0, 40.0]]),
          "scores": torch.tensor([0.9, 0.6]), "labels": torch.tensor([1, 2])}]
target = [{"boxes": torch.tensor([[12.0, 8.0, 48.0, 58.0], [35.0, 10.0, 75.0, 45.0]]),
           "labels": torch.tensor([1, 2])}]
for name, m in {"iou": IntersectionOverUnion(), "giou": GeneralizedIntersectionOverUnion(),
                "ciou": CompleteIntersectionOverUnion(class_metrics=True)}.items():
    m.update(preds, target)
    record(name, {k: v for k, v in sorted(m.compute().items())})
# COCO mAP through pycocotools (in the test extra)
from torchmetrics.detection import MeanAveragePrecision  # noqa: E402
mp_metric = MeanAveragePrecision(iou_type="bbox", class_metrics=True)
mp_metric.update(preds, target)
for _ in range(4):                    # more images: jittered true boxes, false positives, missed objects
    n = int(rng.integers(2, 6))
    xy = rng.uniform(0, 80, (n, 2))
    gt = torch.tensor(np.concatenate([xy, xy + rng.uniform(10, 40, (n, 2))], 1), dtype=torch.float32)
    labels = torch.tensor(rng.integers(0, 3, n))
    det = gt[: n - 1] + torch.tensor(rng.normal(0, 3, (n - 1, 4)), dtype=torch.float32)
    extra = torch.tensor(np.concatenate([xy[:1] + 20, xy[:1] + 45], 1), dtype=torch.float32)
    mp_metric.update([{"boxes": torch.cat([det, extra]), "scores": torch.tensor(rng.random(n), dtype=torch.float32),
                       "labels": torch.cat([labels[: n - 1], labels[:1]])}], [{"boxes": gt, "labels": labels}])
res = mp_metric.compute()
record("map", {k: v for k, v in sorted(res.items()) if k != "classes"})
print("ok")
