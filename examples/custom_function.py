"""A custom autograd.Function checked with gradcheck.

    python examples/custom_function.py [--seed 0]

Defines a numerically stable "softplus with a learnable sharpness" as an ember.autograd.Function with a
hand-written backward, checks its gradients against finite differences with gradcheck and gradgradcheck
(float64), then uses it inside a model trained for a few steps.
"""
from __future__ import annotations

import argparse

import ember
from ember.autograd import Function, gradcheck, gradgradcheck


class SharpSoftplus(Function):
    """y = log(1 + exp(beta * x)) / beta, stable for large |beta * x|."""

    @staticmethod
    def forward(ctx, x, beta):
        z = beta * x
        y = (ember.clamp(z, min=0) + ember.log1p(ember.exp(-z.abs()))) / beta
        ctx.save_for_backward(x, beta, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, beta, y = ctx.saved_tensors
        s = ember.sigmoid(beta * x)                     # dy/dx
        dbeta = (x * s - y) / beta                      # dy/dbeta
        grad_beta = (grad_out * dbeta).sum(0, keepdim=True)    # beta is (1, features)
        return grad_out * s, grad_beta


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=50)
    args = p.parse_args(argv)
    ember.manual_seed(args.seed)

    x = ember.randn(6, 3, dtype=ember.float64, requires_grad=True)
    beta = (ember.rand(1, 3, dtype=ember.float64) + 0.5).requires_grad_()
    print("gradcheck:", gradcheck(SharpSoftplus.apply, (x, beta)))
    print("gradgradcheck:", gradgradcheck(SharpSoftplus.apply, (x, beta)))

    lin1, lin2 = ember.nn.Linear(2, 16), ember.nn.Linear(16, 1)
    beta = ember.nn.Parameter(ember.ones(1, 16))
    params = list(lin1.parameters()) + list(lin2.parameters()) + [beta]
    opt = ember.optim.Adam(params, lr=0.02)
    data = ember.randn(128, 2)
    target = (data[:, :1] * data[:, 1:]).sin()
    for step in range(args.steps):
        loss = ember.nn.functional.mse_loss(lin2(SharpSoftplus.apply(lin1(data), beta)), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == args.steps - 1:
            print(f"step {step:3d}  loss {loss.item():.5f}  mean beta {beta.mean().item():.4f}")


if __name__ == "__main__":
    main()
