"""``python -m ember.demo``: one short epoch end to end (the checkpoint loads in ember and PyTorch, the
accuracy line is printed), its --help and its argument errors."""
import os
import re
import subprocess
import sys

import pytest

import ember

ROOT = os.path.dirname(os.path.dirname(ember.__file__))
ENV = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}


def demo(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "ember.demo", *args], capture_output=True, text=True, env=ENV,
                          cwd=cwd, timeout=300)


def test_one_epoch_end_to_end(tmp_path):
    pytest.importorskip("sklearn", reason="the demo's data: pip install -e '.[demo]'")
    try:
        import tensorboard  # noqa: F401
        tb = ["--tensorboard", str(tmp_path / "tb")]
    except ImportError:
        tb = []
    r = demo("--epochs", "1", "--workers", "2", "--out", str(tmp_path / "out"), *tb)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    m = re.fullmatch(r"final test accuracy: (\d+\.\d)%", lines[-1])
    assert m and 50.0 < float(m.group(1)) <= 100.0, lines[-1]
    assert any(line.startswith("epoch  1  train loss") for line in lines)
    assert any(line.startswith("wall time: ") for line in lines)
    ck = ember.load(tmp_path / "out" / "best.pt")
    assert ck["epoch"] == 1 and set(ck["model"]) >= {"0.weight", "1.running_mean", "13.bias"}
    torch = pytest.importorskip("torch")
    tck = torch.load(tmp_path / "out" / "best.pt", weights_only=True)
    assert tck["model"]["0.weight"].shape == (32, 1, 3, 3)
    try:
        import matplotlib  # noqa: F401
        assert (tmp_path / "out" / "training_curves.png").stat().st_size > 1000
    except ImportError:
        pass
    if tb:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
        ea = EventAccumulator(str(tmp_path / "tb"))
        ea.Reload()
        tags = ea.Tags()
        assert {"train/loss", "test/accuracy", "lr"} <= set(tags["scalars"]) and tags["graph"]
        assert "weights/0.weight" in tags["histograms"] and tags["images"] == ["train/samples"]
        assert len(ea.Scalars("train/loss")) == 45                       # 1437 / 32 batches
        runs = {f for f in os.listdir(tmp_path / "tb") if not f.startswith("events.out.tfevents.")}
        assert runs == {"accuracy_test", "accuracy_train", "hparams", "loss_test", "loss_train"}


def test_help_lists_the_options():
    r = demo("--help")
    assert r.returncode == 0
    for option in ("--epochs", "--batch-size", "--seed", "--workers", "--out"):
        assert option in r.stdout


@pytest.mark.parametrize("args,message", [(["--epochs", "0"], "argument --epochs: expected a positive integer"),
                                          (["--batch-size", "x"], "argument --batch-size: expected a positive"),
                                          (["--workers", "-1"], "argument --workers: expected a non-negative"),
                                          (["--lr", "-1"], "argument --lr: expected a positive learning rate"),
                                          (["--frobnicate"], "unrecognized arguments: --frobnicate")])
def test_bad_arguments_get_a_clear_message(args, message):
    r = demo(*args)
    assert r.returncode == 2 and message in r.stderr
