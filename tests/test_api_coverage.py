"""Coverage of PyTorch's public API (issue 15 item 1): every public name of PyTorch 2.13's namespaces is in
ember or excluded with its reason in tests/api_exclusions.py, and no exclusion names something ember has.

``python -m tests.test_api_coverage`` prints the table: per namespace, PyTorch's public names, how many ember
has, and how many are excluded for each kind of reason."""
from __future__ import annotations

import importlib
import inspect

import pytest

from tests.api_exclusions import EXCLUDED

NAMESPACES = ["torch", "Tensor", "nn.functional", "nn", "linalg", "special", "fft", "distributions", "utils.data",
              "nn.utils", "autograd", "utils", "func"]


def _namespace(lib, ns):
    if ns == "torch":
        return lib
    if ns == "Tensor":
        return lib.Tensor
    return importlib.import_module(f"{lib.__name__}.{ns}")


def _is_api(obj, name):
    """What is not API: ``torch`` inside its own submodules, modules from outside torch and typing helpers a
    namespace happens to import, docstring fragments."""
    if name == "torch" or isinstance(obj, (str, dict)):
        return False
    if inspect.ismodule(obj):
        return obj.__name__.startswith("torch")
    return getattr(obj, "__module__", None) not in ("typing", "collections.abc", "typing_extensions")


def _excluded(ns):
    out = {}
    for reason, by_ns in EXCLUDED.items():
        for name in by_ns.get(ns, "").split():
            out[name] = reason
    return out


_PROBE = """
import json, sys
import torch, ember
sys.path.insert(0, {root!r})
from tests.test_api_coverage import NAMESPACES, _is_api, _namespace
out = {{}}
for ns in NAMESPACES:
    t, e = _namespace(torch, ns), _namespace(ember, ns)
    names = sorted(n for n in dir(t) if not n.startswith("_") and _is_api(getattr(t, n, None), n))
    out[ns] = [names, sorted(n for n in dir(e) if not n.startswith("_"))]
print(json.dumps(out))
"""


def _fresh_names():
    """Each namespace's names in a fresh interpreter: what ``dir(torch.utils)`` lists depends on which
    submodules the process imported before (other tests import ``torch.utils.checkpoint`` ...)."""
    import json
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    res = subprocess.run([sys.executable, "-c", _PROBE.format(root=root)], capture_output=True, text=True, check=True,
                         cwd=root)
    return json.loads(res.stdout)


_CACHE: dict = {}


def coverage():
    """{namespace: (PyTorch's public API names, the ones ember has, {reason: excluded names}, unexplained,
    stale exclusions)}"""
    if "names" not in _CACHE:
        _CACHE["names"] = _fresh_names()
    table = {}
    for ns in NAMESPACES:
        t_names, e_names = _CACHE["names"][ns]
        names, e_all = set(t_names), set(e_names)
        have = names & e_all
        excluded = _excluded(ns)
        by_reason: dict[str, set] = {}
        for n in names - have:
            if n in excluded:
                by_reason.setdefault(excluded[n], set()).add(n)
        unexplained = names - have - set(excluded)
        stale = {n for n in excluded if n in e_all}
        table[ns] = (names, have, by_reason, unexplained, stale)
    return table


@pytest.mark.parametrize("ns", NAMESPACES)
def test_every_public_name_is_in_ember_or_excluded_with_a_reason(ns):
    pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")
    names, have, by_reason, unexplained, stale = coverage()[ns]
    assert not unexplained, f"PyTorch's {ns} has {sorted(unexplained)}: add them to ember, or to " \
                            f"tests/api_exclusions.py with the reason"
    assert not stale, f"ember now has {sorted(stale)} of {ns}: delete them from tests/api_exclusions.py"


if __name__ == "__main__":
    rows = coverage()
    print("| namespace | PyTorch names | ember has | excluded |")
    print("|---|---|---|---|")
    for ns, (names, have, by_reason, _u, _s) in rows.items():
        n_ex = sum(len(v) for v in by_reason.values())
        print(f"| `{ns}` | {len(names)} | {len(have)} ({100 * len(have) // max(len(names), 1)}%) | {n_ex} |")


def test_the_check_sees_a_missing_name_and_a_stale_exclusion(monkeypatch):
    pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")
    import tests.api_exclusions as ex
    reason = next(r for r, by in ex.EXCLUDED.items() if "PyTorchFileReader" in by.get("torch", ""))
    trimmed = {r: dict(by) for r, by in ex.EXCLUDED.items()}
    trimmed[reason]["torch"] = " ".join(n for n in trimmed[reason]["torch"].split() if n != "PyTorchFileReader")
    monkeypatch.setattr("tests.test_api_coverage.EXCLUDED", trimmed)
    assert coverage()["torch"][3] == {"PyTorchFileReader"}
    monkeypatch.setattr("tests.test_api_coverage.EXCLUDED", {**trimmed, "x": {"linalg": "norm"}})  # ember has it
    assert coverage()["linalg"][4] == {"norm"}
