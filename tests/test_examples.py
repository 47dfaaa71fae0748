"""Each example in examples/ runs for a few steps (subprocess, tiny settings) and prints what it promises."""
import os
import subprocess
import sys

import pytest

import ember

ROOT = os.path.dirname(os.path.dirname(ember.__file__))
ENV = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}


def run(name, *args, cwd=None):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", name), *args], capture_output=True, text=True,
                       env=ENV, cwd=cwd, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def test_custom_function():
    out = run("custom_function.py", "--steps", "5")
    assert "gradcheck: True" in out and "gradgradcheck: True" in out and "step   4" in out


def test_internals():
    out = run("internals.py")
    assert "aten::addmm  call  keys=DispatchKeySet(CPU, ADInplaceOrView, AutogradCPU, AutocastCPU)" in out
    assert "-> AutogradCPU: _ag_addmm_default" in out and "NumPy kernel ember.aten.kernels.linalg.addmm" in out
    assert "AddmmBackward0" in out and "aten::mm" in out
    assert "tools/autograd/derivatives.yaml" in out


def test_char_gpt_trains_checkpoints_resumes_and_samples(tmp_path):
    ck = str(tmp_path / "gpt.pt")
    small = ["--layers", "1", "--d-model", "32", "--block", "16", "--batch-size", "4", "--ckpt", ck,
             "--ckpt-every", "5", "--sample-len", "30"]
    out = run("char_gpt.py", "--steps", "10", *small)
    assert "step    10  loss" in out and "--- sample ---" in out
    assert ember.load(ck)["step"] == 10
    out = run("char_gpt.py", "--steps", "20", "--resume", *small)
    assert "resumed from" in out and "step    20" in out and "step    10" not in out
    assert ember.load(ck)["step"] == 20


def test_lstm_lm():
    out = run("lstm_lm.py", "--epochs", "2", "--max-batches", "3", "--emsize", "16", "--nhid", "16")
    assert "epoch 2  train loss" in out and "valid ppl" in out and "best valid perplexity" in out


@pytest.mark.parametrize("data", [[], ["--synthetic"]])
def test_resnet(data):
    out = run("resnet.py", "--epochs", "1", "--max-batches", "3", "--width", "8", *data)
    assert "cudnn.benchmark on" in out and "epoch 1  train loss" in out and "test accuracy" in out


@pytest.mark.skipif(not ember.distributed.is_available(), reason="the MPI engine (mpi4py + mpich) is not installed")
def test_ddp_train_on_two_ranks_and_alone(tmp_path):
    ck = str(tmp_path / "ddp.pt")
    env = {k: v for k, v in ENV.items() if k not in ("RANK", "WORLD_SIZE", "PYTHONUNBUFFERED")}
    r = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", "2",
                        os.path.join(ROOT, "examples", "ddp_train.py"), "--epochs", "2", "--max-batches", "4",
                        "--checkpoint", ck], capture_output=True, text=True, env=env, timeout=600, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "on 2 rank(s), 64 samples per step" in r.stdout and "epoch 2  train loss" in r.stdout
    assert r.stdout.count("test accuracy") == 2  # rank 0 reports; the others stay quiet
    assert ember.load(ck)["epoch"] == 2
    out = run("ddp_train.py", "--epochs", "1", "--max-batches", "2", "--checkpoint", ck, "--synthetic")
    assert "on 1 rank(s)" in out and "epoch 1  train loss" in out


def test_distill_trains_a_student_and_quantizes_it():
    out = run("distill.py", "--epochs", "1", "--synthetic")
    assert "QuantizedConvReLU2d" in out and "QuantizedLinear(" in out
    rows = {line.split("  ")[0]: line for line in out.splitlines() if "test accuracy" in line}
    assert set(rows) == {"teacher", "student", "student, int8 (static)"}
    sizes = {k: float(v.split("state_dict")[1].split()[0]) for k, v in rows.items()}
    assert sizes["student, int8 (static)"] < sizes["student"] < sizes["teacher"]
    out = run("distill.py", "--epochs", "1", "--synthetic", "--quantize", "dynamic")
    assert "DynamicQuantizedLinear" in out


def test_detect_shapes_trains_yolo_validates_and_draws(tmp_path):
    """The ultralytics example, tiny: epochs print their losses and mAP50, the final validation runs on the saved
    best checkpoint, and the predictions PNG is written (ultralytics is in the test extra)."""
    import importlib.util
    # looked up, not imported: importing ultralytics here would import PyTorch into this process and change its
    # print options (ultralytics sets a wide linewidth), which other tests compare ember's reprs against
    if importlib.util.find_spec("ultralytics") is None:
        pytest.skip("ultralytics is not installed (it is in the test extra)")
    out = run("detect_shapes.py", "--epochs", "2", "--train", "16", "--val", "4", "--imgsz", "64", "--workers", "0",
              "--out", str(tmp_path / "out"), cwd=str(tmp_path))
    assert "+ember" in out.splitlines()[0]
    assert "epoch   1  box_loss" in out and "epoch   2  box_loss" in out and "mAP50" in out
    assert "final validation: mAP50" in out and "wrote" in out
    assert (tmp_path / "out" / "predictions.png").stat().st_size > 1000
    assert (tmp_path / "out" / "train" / "weights" / "best.pt").exists()
