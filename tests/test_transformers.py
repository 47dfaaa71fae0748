"""Hugging Face ``transformers`` runs unmodified on ember (issue 15 item 8): tiny randomly initialised GPT-2, BERT,
Llama and T5 models (tests/programs/torch_scripts/hf_tiny_models.py) train, generate and round-trip through
save_pretrained / from_pretrained under ``python -m ember`` with PyTorch's numbers."""
import os
import re
import subprocess
import sys

import pytest

import ember

pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")
pytest.importorskip("transformers", reason="transformers is not installed (it is in the test extra)")

ROOT = os.path.dirname(os.path.dirname(ember.__file__))
SCRIPT = os.path.join(os.path.dirname(__file__), "programs", "torch_scripts", "hf_tiny_models.py")
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")


def run(args, workdir):
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1"}
    r = subprocess.run(args + [str(workdir)], capture_output=True, text=True, timeout=600, env=env, cwd=workdir)
    assert r.returncode == 0, r.stderr[-3000:]
    return [ln for ln in r.stdout.strip().splitlines() if ln]


@pytest.mark.slow
@pytest.mark.parametrize("model", ["gpt2", "bert", "llama", "t5"])
def test_tiny_model_trains_generates_and_reloads_as_on_pytorch(model, tmp_path):
    (tmp_path / "e").mkdir()
    (tmp_path / "t").mkdir()
    got = run([sys.executable, "-m", "ember", SCRIPT, model], tmp_path / "e")
    # PyTorch's side: transformers imports torchvision when it is installed (tools/torchvision_oracle.py)
    ref = run([sys.executable, "-m", "tools.torchvision_oracle", SCRIPT, model], tmp_path / "t")
    assert len(got) == len(ref) >= 5, (got, ref)
    for g, r in zip(got, ref):
        assert NUMBER.sub("#", g) == NUMBER.sub("#", r), (g, r)
        for a, b in zip(NUMBER.findall(g), NUMBER.findall(r)):
            assert float(a) == pytest.approx(float(b), rel=1e-4, abs=1e-4), (g, r)


@pytest.mark.slow
@pytest.mark.parametrize("model", ["gpt2", "bert", "llama", "t5"])
def test_tiny_model_trains_compiled_as_uncompiled(model, tmp_path):
    """torch.compile on a Hugging Face model under ``python -m ember``: the losses of three training steps equal
    the uncompiled copy's (dropout drawn from the same seed); a model whose forward returns a cache object breaks
    its graph at the top and runs its submodules compiled."""
    script = os.path.join(os.path.dirname(SCRIPT), "hf_compile.py")
    out = run([sys.executable, "-m", "ember", script, model], tmp_path)
    compiled = [ln.split()[-1] for ln in out if ln.startswith("compiled")]
    eager = [ln.split()[-1] for ln in out if ln.startswith("eager")]
    assert len(compiled) == len(eager) == 3
    for a, b in zip(compiled, eager):
        assert float(a) == pytest.approx(float(b), rel=1e-5, abs=1e-6), out
    graphs, breaks = map(int, NUMBER.findall(out[-1]))
    assert graphs + breaks >= 1, out
