"""torchvision runs unmodified under ``python -m ember`` with PyTorch's numbers: its compiled operators (ember's own
definitions, ``ember/extensions/torchvision``), classification, detection and segmentation models with PyTorch's
weights. Each script runs on PyTorch (torchvision's real C++ kernels: Note [torchvision on CPU PyTorch] in
``scripts/_harness.py``) and under ember, each in its own process."""
import pytest

from tests.ecosystem._runner import assert_same, needs, run_both

needs("torchvision")


def test_compiled_operators_and_layers_match_torchvision(tmp_path):
    ref, got, _, _ = run_both("tv_ops.py", tmp_path)
    assert ref["has_ops"] and got["has_ops"]
    assert_same(ref, got, rtol=1e-5, atol=1e-6)


CLASSIFIERS = ["resnet18", "mobilenet_v3_small", "efficientnet_b0", "convnext_tiny", "swin_t", "vit", "regnet_y_400mf"]


@pytest.mark.slow
@pytest.mark.parametrize("model", CLASSIFIERS)
def test_classification_model_matches_pytorch(model, tmp_path):
    """float32 eval logits and training loss; a float64 training step's gradients and updated logits."""
    ref, got, _, _ = run_both("tv_classification.py", tmp_path, model)
    assert_same(ref, got, rtol=1e-4, atol=1e-5, tolerances={"grad64": (1e-6, 1e-8), "loss64": (1e-10, 0),
                                                               "logits64": (1e-6, 1e-8)})


DETECTORS = ["fasterrcnn_mobilenet_v3_large_fpn", "fasterrcnn_resnet50_fpn", "maskrcnn_resnet50_fpn",
             "retinanet_resnet50_fpn", "ssdlite320_mobilenet_v3_large", "fcn_resnet50", "deeplabv3_mobilenet_v3_large"]


@pytest.mark.slow
@pytest.mark.parametrize("model", DETECTORS)
def test_detection_and_segmentation_model_matches_pytorch(model, tmp_path):
    """In float64 (random weights score many boxes alike, so float32 rounding reorders them): training losses,
    gradients, and the inference outputs (boxes, labels, scores, masks)."""
    ref, got, _, _ = run_both("tv_detection.py", tmp_path, model, "float64")
    assert_same(ref, got, rtol=1e-7, atol=1e-9)


@pytest.mark.slow
def test_detection_model_float32_losses_match_pytorch(tmp_path):
    ref, got, _, _ = run_both("tv_detection.py", tmp_path, "fasterrcnn_mobilenet_v3_large_fpn")
    ref = {k: v for k, v in ref.items() if not k.startswith("detections")}
    got = {k: v for k, v in got.items() if not k.startswith("detections")}
    assert_same(ref, got, rtol=1e-4, atol=1e-5)


def test_transforms_datasets_and_utilities_match_torchvision(tmp_path):
    """Functional and seeded random transforms (v1 and v2, tensors, PIL images, boxes and masks), ImageFolder and
    FakeData through the DataLoader (2 workers), make_grid / draw_bounding_boxes / save_image."""
    ref, got, _, _ = run_both("tv_data.py", tmp_path)
    assert_same(ref, got, rtol=1e-5, atol=1e-5, tolerances={"augmix": (0, 1.01 / 200)})  # 1 in 0..255


ZOO = ["alexnet", "vgg11_bn", "googlenet", "inception_v3", "densenet121", "shufflenet_v2_x0_5", "mnasnet0_5",
       "squeezenet1_1", "efficientnet_v2_s", "maxvit_t", "swin_v2_t", "wide_resnet50_2", "resnext50_32x4d",
       "regnet_x_400mf", "mobilenet_v2", "r3d_18", "r2plus1d_18", "s3d", "mvit_v2_s", "swin3d_t",
       "lraspp_mobilenet_v3_large", "fcos_resnet50_fpn", "keypointrcnn_resnet50_fpn", "ssd300_vgg16", "raft_small",
       "quantizable_resnet18"]


@pytest.mark.slow
@pytest.mark.parametrize("part", [0, 1])
def test_the_rest_of_the_model_zoo_matches_pytorch_from_a_seed(part, tmp_path):
    """Eval outputs of 26 more models, each framework initialising its own weights from seed 0."""
    ref, got, _, _ = run_both("tv_sweep.py", tmp_path, ",".join(ZOO[part::2]), timeout=1200)
    assert_same(ref, got, rtol=1e-4, atol=1e-5)
