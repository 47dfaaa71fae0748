"""ultralytics YOLO runs unmodified under ``python -m ember`` with PyTorch's numbers: models built from their YAML,
the detection loss, a training epoch (mosaic dataloader, loss, EMA, checkpoint), val and predict on a PyTorch-trained
checkpoint, and export to ONNX (ember's exporter) run in onnxruntime. Nothing is downloaded."""
import pytest

from tests.ecosystem._runner import assert_same, needs, run_both

needs("ultralytics", "torchvision", "onnxruntime")


@pytest.mark.slow
@pytest.mark.parametrize("cfg", ["yolov8n.yaml", "yolo11n.yaml"])
def test_yolo_from_yaml_matches_pytorch(cfg, tmp_path):
    """Eval outputs, and the detection loss with its gradients (float32: ultralytics builds its targets in float32,
    and PyTorch refuses float64 predictions against them -- as ember now does)."""
    ref, got, _, _ = run_both("ultralytics_yolo.py", tmp_path, f"model:{cfg}")
    assert_same(ref, got, rtol=1e-4, atol=1e-5, tolerances={"grad": (1e-3, 1e-4)})


@pytest.mark.slow
def test_a_training_epoch_matches_pytorch(tmp_path):
    """From ultralytics' own seeded initialisation: the epoch's mean losses and the saved EMA weights."""
    ref, got, _, _ = run_both("ultralytics_yolo.py", tmp_path, "train")
    assert_same(ref, got, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_val_predict_and_onnx_export_on_a_pytorch_checkpoint(tmp_path):
    ref, got, _, _ = run_both("ultralytics_yolo.py", tmp_path, "checkpoint")
    # each side exported its own ONNX file: each runs in onnxruntime as its model runs eagerly
    assert float(ref.pop("onnx_vs_eager")) < 1e-5 and float(got.pop("onnx_vs_eager")) < 1e-5
    assert_same(ref, got, rtol=1e-5, atol=1e-6)
