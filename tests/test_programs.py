"""PyTorch programs of the kinds people run (tests/programs/torch_scripts/), run unmodified through
``python -m ember`` and through PyTorch: the printed losses, accuracies and samples must agree."""
import os
import re
import subprocess
import sys

import pytest

import ember

pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")

ROOT = os.path.dirname(os.path.dirname(ember.__file__))
SCRIPTS = os.path.join(os.path.dirname(__file__), "programs", "torch_scripts")
NUMBER = re.compile(r"-?\d+\.\d+(?:e-?\d+)?")

# (script, relative tolerance on printed numbers): float32 training with Adam amplifies summation-order
# differences of the convolution kernels over the CNN's steps; the others agree to the printed digits (the
# compiled program: ember.compile against torch.compile with Inductor, whose fused updates round differently);
# fidelity_prints.py prints what programs see of PyTorch itself (reprs, fx code, what modes see): every character;
# dynamo_graphs.py the graphs custom compile backends receive.
PROGRAMS = [("regression.py", 1e-5), ("char_gpt.py", 1e-4), ("lstm_lm.py", 1e-4), ("cnn_classifier.py", 2e-2),
            ("lbfgs_lstmcell.py", 1e-6), ("fx_transforms.py", 1e-5), ("compiled_training.py", 1e-4),
            ("fidelity_prints.py", 0.0), ("dynamo_graphs.py", 1e-5)]


def run(args, tmp_path):
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run(args + [str(tmp_path)], capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout.strip().splitlines()


@pytest.mark.parametrize("script,rtol", PROGRAMS, ids=[p for p, _ in PROGRAMS])
def test_program_runs_on_ember_like_on_pytorch(script, rtol, tmp_path):
    path = os.path.join(SCRIPTS, script)
    (tmp_path / "e").mkdir()
    (tmp_path / "t").mkdir()
    got = run([sys.executable, "-m", "ember", path], tmp_path / "e")
    ref = run([sys.executable, path], tmp_path / "t")
    assert len(got) == len(ref) and got
    for g, r in zip(got, ref):
        assert NUMBER.sub("#", g) == NUMBER.sub("#", r)          # same words, same non-numeric output
        for a, b in zip(NUMBER.findall(g), NUMBER.findall(r)):
            assert float(a) == pytest.approx(float(b), rel=rtol, abs=1e-6), (g, r)


def test_missing_attributes_and_modules_are_named(tmp_path):
    script = tmp_path / "uses_missing.py"
    script.write_text("import torch\nx = torch.ones(2)\nprint(torch.frobnicate(x))\n")
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run([sys.executable, "-m", "ember", str(script)], capture_output=True, text=True, env=env)
    assert r.returncode != 0
    assert "AttributeError: torch.frobnicate is not available in ember" in r.stderr
    script.write_text("import torch.package\n")
    r = subprocess.run([sys.executable, "-m", "ember", str(script)], capture_output=True, text=True, env=env)
    assert "No module named 'torch.package': ember has no 'ember.package'" in r.stderr
    r = subprocess.run([sys.executable, "-m", "ember", "--help"], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "usage: python -m ember SCRIPT" in r.stdout
    r = subprocess.run([sys.executable, "-m", "ember", "nope.py"], capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "can't open file" in r.stderr


def test_the_submodules_pytorch_code_imports_exist(tmp_path):
    script = tmp_path / "imports.py"
    script.write_text(
        "import torch, torch.nn, torch.nn.functional, torch.nn.init, torch.nn.utils, torch.optim\n"
        "import torch.optim.lr_scheduler, torch.utils.data, torch.utils.data.dataloader, torch.autograd\n"
        "import torch.linalg, torch.cuda, torch.backends, torch.backends.cudnn, torch.serialization\n"
        "import torch.testing, torch.distributions\n"
        "from torch.nn.utils import clip_grad_norm_\n"
        "from torch.testing import assert_close\n"
        "from torch.distributions import Normal, Categorical, Bernoulli, Uniform\n"
        "assert torch.nn is torch.nn and not torch.cuda.is_available()\n"
        "assert isinstance(torch.ones(1), torch.Tensor)\n"
        "print(torch.__version__, torch.cuda.device_count())\n")
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run([sys.executable, "-m", "ember", str(script)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["2.13.0+ember" + ember.__version__, "0"]


def test_install_as_torch_in_process():
    code = ("import ember; ember.install_as_torch()\nimport torch\nimport torch.nn as nn\n"
            "assert torch.ones(2).__class__ is ember.Tensor and nn.Linear is ember.nn.Linear\nprint('ok')\n")
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
