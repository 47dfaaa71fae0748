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


# more of timm's families, forward only at each model's own input size (CNNs, hybrids, transformers, MLPs, RNNs)
SWEEP = ["densenet121", "inception_v3", "xception41", "regnetx_002", "resnext50_32x4d", "res2net50_26w_4s", "dla34",
         "dpn68", "hrnet_w18_small", "ghostnet_100", "mobilevit_xxs", "mobileone_s0", "repvgg_a0", "levit_128s",
         "poolformer_s12", "cait_xxs24_224", "coat_lite_tiny", "crossvit_tiny_240", "pit_ti_224",
         "tnt_s_patch16_224", "twins_svt_small", "eva02_tiny_patch14_224", "deit3_small_patch16_224",
         "maxvit_tiny_tf_224", "coatnet_0_rw_224", "efficientformer_l1", "efficientformerv2_s0", "fastvit_t8",
         "edgenext_xx_small", "mobilevitv2_050", "nfnet_l0", "regnetz_b16", "cspdarknet53", "rexnet_100",
         "tinynet_a", "mixnet_s", "hardcorenas_a", "sequencer2d_s", "gcvit_xxtiny", "davit_tiny",
         "focalnet_tiny_srf", "inception_next_tiny", "hiera_tiny_224", "vit_small_patch16_rope_224", "caformer_s18",
         "mambaout_femto", "vitamin_small_224"]


@pytest.mark.slow
@pytest.mark.parametrize("part", [0, 1])
def test_a_sweep_of_families_matches_pytorch(part, tmp_path):
    """Eval logits of 47 more models, with PyTorch's weights."""
    names = SWEEP[part::2]
    ref, got, _, _ = run_both("timm_models.py", tmp_path, "sweep:" + ",".join(names), timeout=1200)
    assert sorted(ref) == sorted(names)
    assert_same(ref, got, rtol=1e-4, atol=1e-5)
