"""``ember.nn.attention``: flex_attention and its BlockMask against PyTorch's (whose CPU path is the same eager
computation: full scores, score_mod / mask_mod on index tensors), and sdpa_kernel."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.attention.flex_attention  # noqa: F401 - a submodule, imported on demand as in PyTorch

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")
import torch.nn.attention.flex_attention  # noqa: E402,F401,F811


@pytest.fixture(autouse=True)
def _keep_distribution_validation():
    """PyTorch's flex_attention starts dynamo, whose TorchPatcher switches distribution argument validation off
    for the whole process: switch it back for the tests that run after these in this worker."""
    before = torch.distributions.Distribution._validate_args
    yield
    torch.distributions.Distribution.set_default_validate_args(before)


def causal(b, h, q, kv):
    return q >= kv


def _padding(L):
    keep = L.tensor([[1] * 250 + [0] * 50, [1] * 300]).bool()
    return lambda b, h, q, kv: keep[b, kv]


@pytest.mark.parametrize("case", ["causal", "and_masks", "or_masks", "no mask"])
def test_block_masks_and_outputs_match_pytorch(case):
    res = []
    for L in (torch, ember):
        fa = L.nn.attention.flex_attention
        mod = {"causal": causal, "and_masks": fa.and_masks(causal, _padding(L)),
               "or_masks": fa.or_masks(causal, lambda b, h, q, kv: kv < 8), "no mask": None}[case]
        bm = fa.create_block_mask(mod, 2, None, 200, 300, device="cpu") if mod else None
        rng = np.random.default_rng(0)
        q = L.tensor(rng.standard_normal((2, 4, 200, 16)).astype(np.float32))
        k = L.tensor(rng.standard_normal((2, 2, 300, 16)).astype(np.float32))
        v = L.tensor(rng.standard_normal((2, 2, 300, 8)).astype(np.float32))
        out, aux = fa.flex_attention(q, k, v, score_mod=lambda s, b, h, qi, ki: s + (qi - ki) * 0.01, block_mask=bm,
                                     enable_gqa=True, return_aux=fa.AuxRequest(lse=True))
        r = [out.numpy(), aux.lse.numpy()]
        if bm is not None:
            r += [bm.kv_num_blocks.numpy(), bm.kv_indices.numpy(), bm.full_kv_num_blocks.numpy(),
                  bm.full_kv_indices.numpy(), bm.q_num_blocks.numpy(), bm.q_indices.numpy(), bm.to_dense().numpy(),
                  np.array(bm.sparsity()), np.array(bm.shape)]
        res.append(r)
    for a, b in zip(*res):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)


def test_errors_and_gradients():
    fa = ember.nn.attention.flex_attention
    q, k = ember.randn(1, 4, 8, 4), ember.randn(1, 2, 8, 4)
    with pytest.raises(ValueError, match="Try setting enable_gqa=True for GQA"):
        fa.flex_attention(q, k, k)
    bm = fa.create_block_mask(causal, None, None, 4, 4)
    with pytest.raises(ValueError, match="block_mask was created for"):
        fa.flex_attention(q, q, q, block_mask=bm)
    # ember differentiates flex_attention on the CPU (PyTorch's CPU path refuses backward): check the gradient
    # against scaled_dot_product_attention with the same causal mask
    x = ember.randn(1, 2, 8, 4, dtype=ember.float64, requires_grad=True)
    bm = fa.create_block_mask(causal, None, None, 8, 8)
    g1, = ember.autograd.grad(fa.flex_attention(x, x, x, block_mask=bm).sum(), x)
    g2, = ember.autograd.grad(ember.nn.functional.scaled_dot_product_attention(x, x, x, is_causal=True).sum(), x)
    np.testing.assert_allclose(g1.numpy(), g2.numpy(), rtol=1e-10)


def test_sdpa_kernel_takes_backends_and_refuses_nothing():
    from ember.nn.attention import SDPBackend, sdpa_kernel
    q = ember.randn(1, 2, 4, 8, requires_grad=True)
    with sdpa_kernel([SDPBackend.MATH]):               # the math path: matmul, softmax, matmul
        out = ember.nn.functional.scaled_dot_product_attention(q, q, q)
    assert "Flash" not in out.grad_fn.name()
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):      # the fused CPU op, as PyTorch picks it for these inputs
        fused = ember.nn.functional.scaled_dot_product_attention(q, q, q)
        assert fused.grad_fn.name() == "ScaledDotProductFlashAttentionForCpuBackward0"
        np.testing.assert_allclose(fused.detach().numpy(), out.detach().numpy(), rtol=1e-6, atol=1e-6)
    assert "Flash" in ember.nn.functional.scaled_dot_product_attention(q, q, q).grad_fn.name()   # the default
    TB = torch.nn.attention.SDPBackend
    for name in ("ERROR", "MATH", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "OVERRIDEABLE"):
        assert int(getattr(SDPBackend, name)) == int(getattr(TB, name))
    with pytest.raises(RuntimeError):
        with sdpa_kernel([]):
            pass
