"""``python -m ember.demo``: a first look at ember (the training demo lands with issue 7).

Builds tensors, runs a few ops through the dispatcher, shows that random numbers match PyTorch's
stream, and prints the path of one call.
"""
from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m ember.demo", description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = p.parse_args(argv)

    import ember

    ember.manual_seed(args.seed)
    x = ember.randn(3, 4)
    w = ember.randn(4, 2)
    print("x = ember.randn(3, 4) after ember.manual_seed(%d):" % args.seed)
    print(x)
    y = (x @ w).relu()
    print("\n(x @ w).relu():")
    print(y)
    print("\ny.sum(dim=0) =", y.sum(dim=0))
    print("x[1:, ::2] is a view sharing storage:", x[1:, ::2].untyped_storage().data_ptr() == x.data_ptr())
    print("\nthe path of ember.mul through the dispatcher:")
    from ember.aten.dispatcher import Dispatcher
    for step in Dispatcher.find("aten::mul.Tensor").dispatch_trace(x._ks):
        print("  ", step)
    print(f"\n{len(Dispatcher.ops)} operator overloads registered")
    return 0


if __name__ == "__main__":
    sys.exit(main())
