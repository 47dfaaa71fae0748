"""The profiler's cost, ember and PyTorch, each in a process of its own.

    python -m bench.profiler [--quick] [--rounds 3]

Workloads: a small MLP's training step (3 Linear layers of 64, batch 16, SGD: about 40 operator calls and 10
autograd nodes, where per-call costs dominate) and 200 additions of 10-element tensors. The "profiled" sides run
each step inside ``profiler.profile()`` (recording every operator; the profile's start and stop included). Ratios
are each side's time over plain ember's; a profiled side's ratio is below 1 by the cost of recording. Without a
profiler ember's operator calls run their plain entry (Note [RecordFunction] in ember/autograd/profiler.py).
"""
from __future__ import annotations

from bench._timing import Bench, Side, Workload, run

OPTIONS = {"profiled": False}


def _profiled(lib):
    OPTIONS["profiled"] = True


def _wrap(lib, body):
    if not OPTIONS["profiled"]:
        return body

    def step():
        with lib.profiler.profile():
            return body()
    return step


def _mlp(lib, quick):
    lib.manual_seed(0)
    nn = lib.nn
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    x, y = lib.randn(16, 64), lib.randint(0, 10, (16,))

    def body():
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return _wrap(lib, body)


def _adds(lib, quick):
    x = lib.ones(10)

    def body():
        y = x
        for _ in range(20 if quick else 200):
            y = y + 1
        return y
    return _wrap(lib, body)


BENCH = Bench(__name__, __doc__,
              {"MLP training step (3 x Linear 64, batch 16)": Workload(_mlp, number=20, warm=5, quick_number=2),
               "200 additions of 10 elements": Workload(_adds, number=20, warm=5, quick_number=2)},
              sides=(Side("ember", "ember"), Side("ember profiled", "ember", _profiled), Side("torch", "torch"),
                     Side("torch profiled", "torch", _profiled)),
              unit="us", ratios_to_all=True)


def main(argv=None):
    run(BENCH, argv)


if __name__ == "__main__":
    main()
