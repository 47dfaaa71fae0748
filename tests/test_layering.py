"""The import direction of DESIGN.md's layer map: c10 <- aten <- autograd <- frontend."""
import ast
import os

import ember

PKG = os.path.dirname(ember.__file__)
ORDER = {"c10": 0, "aten": 1, "autograd": 2}


def layer_of(rel):
    top = rel.split(os.sep)[0]
    return ORDER.get(top, 3)


def imports_of(path):
    tree = ast.parse(open(path).read())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ember"):
            yield node.module
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("ember"):
                    yield a.name


def test_lower_layers_do_not_import_higher_ones_at_module_level():
    bad = []
    for root, _, files in os.walk(PKG):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, PKG)
            mine = layer_of(rel)
            if mine == 3:
                continue
            tree = ast.parse(open(path).read())
            for node in tree.body:  # module-level imports only; lazy imports inside functions are allowed
                mods = []
                if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ember"):
                    mods = [node.module]
                elif isinstance(node, ast.Import):
                    mods = [a.name for a in node.names if a.name.startswith("ember")]
                for m in mods:
                    parts = m.split(".")
                    target = ORDER.get(parts[1], 3) if len(parts) > 1 else 3
                    if target > mine:
                        bad.append(f"{rel} imports {m}")
    assert not bad, bad


def test_parity_tests_import_pytorch_through_importorskip():
    """PyTorch is the test oracle only: a test module imports it after ``pytest.importorskip("torch")``, so
    that without PyTorch its parity tests skip with a reason instead of failing at collection."""
    tests = os.path.dirname(os.path.abspath(__file__))
    bad = []
    for root, _, files in os.walk(tests):
        if os.path.join("programs", "torch_scripts") in root:  # PyTorch programs, run as scripts
            continue
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(root, f)
            skipped = False
            for node in ast.parse(open(path).read()).body:
                if "importorskip" in ast.unparse(node) and "torch" in ast.unparse(node):
                    skipped = True
                names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                         [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                if not skipped and any(n == "torch" or n.startswith("torch.") for n in names):
                    bad.append(os.path.relpath(path, tests))
    assert not bad, f"import torch before pytest.importorskip('torch'): {bad}"
