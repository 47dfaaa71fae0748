"""timm runs unmodified under ``python -m ember`` with PyTorch's numbers: models across its families built by
``create_model`` (with PyTorch's weights), and its training utilities."""
import pytest

from tests.ecosystem._runner import assert_same, needs, run_both

needs("timm", "torchvision")

FAMILIES = ["resnet18", "seresnet18", "ecaresnet26t", "vit_tiny_patch16_224", "deit_tiny_patch16_224",
            "convnext_atto", "efficientnet_b0", "mobilenetv3_small_050", "swin_tiny_patch4_window7_224"]


@pytest.mark.slow
@pytest.mark.parametrize("model", FAMILIES)
def test_create_model_matches_pytorch(model, tmp_path):
    """float32 eval logits and features, the data config, and a float64 training step's gradients."""
    ref, got, _, _ = run_both("timm_models.py", tmp_path, model)
    assert_same(ref, got, rtol=1e-4, atol=1e-5, tolerances={"grad64": (1e-6, 1e-8), "loss64": (1e-10, 0)})


def test_optimizers_schedulers_mixup_and_ema_match_pytorch(tmp_path):
    """create_optimizer_v2 (AdamW, SGD, LAMB, AdaBelief, RMSprop) with a warmup-cosine scheduler and ModelEmaV3 over
    three steps, Mixup / CutMix with label smoothing and the soft-target loss, in float64."""
    ref, got, _, _ = run_both("timm_models.py", tmp_path, "training")
    assert_same(ref, got, rtol=1e-8, atol=1e-10)
