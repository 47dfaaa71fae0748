"""torchmetrics runs unmodified under ``python -m ember`` with PyTorch's numbers: classification (multiclass,
binary, multilabel), regression, aggregation and detection metrics through update / compute / forward / reset, and
a MetricCollection."""
from tests.ecosystem._runner import assert_same, needs, run_both

needs("torchmetrics", "torchvision", "pycocotools")


def test_metrics_match_pytorch(tmp_path):
    ref, got, _, _ = run_both("torchmetrics_all.py", tmp_path)
    assert any(k.startswith("map.") for k in ref)
    assert_same(ref, got, rtol=1e-5, atol=1e-6)
