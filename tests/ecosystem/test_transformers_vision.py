"""Hugging Face transformers with torchvision installed (it imports torchvision then): a ViT image classifier and
its image processors under ``python -m ember`` with PyTorch's numbers. The text models of tests/test_transformers.py
run in the same environment."""
from tests.ecosystem._runner import assert_same, needs, run_both

needs("transformers", "torchvision")


def test_vit_image_classification_matches_pytorch(tmp_path):
    ref, got, _, _ = run_both("hf_vision.py", tmp_path)
    assert_same(ref, got, rtol=1e-5, atol=1e-6)
