"""The import direction of DESIGN.md's layer map: c10 <- aten <- autograd <- frontend. Every import counts,
function-level ones included (a lazy import does not remove a dependency), and the frontend reaches the
operator library through its public or internal op API, never through the array kernels."""
import ast
import os

import ember

PKG = os.path.dirname(ember.__file__)
C10, ATEN, AUTOGRAD, FRONTEND = range(4)
LAYERS = {"c10": C10, "aten": ATEN, "autograd": AUTOGRAD}
# generated modules sit in the layer of what they generate from
GENERATED = {"aten": ATEN, "registrations": ATEN, "autograd": AUTOGRAD}
# modules at PyTorch's public paths that belong to a lower layer: torch.return_types is the op library's
TOP_LEVEL = {"return_types": ATEN}


def layer_of_module(name):
    """The layer of the module ``ember.x.y``."""
    parts = name.split(".")[1:]
    if not parts:
        return FRONTEND
    if parts[0] == "_generated":
        return GENERATED.get(parts[1], FRONTEND) if len(parts) > 1 else ATEN
    if parts[0] in TOP_LEVEL and len(parts) == 1:
        return TOP_LEVEL[parts[0]]
    return LAYERS.get(parts[0], FRONTEND)


def modules():
    for root, _, files in os.walk(PKG):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(root, f)
                rel = os.path.relpath(path, os.path.dirname(PKG))[:-3].replace(os.sep, ".")
                yield path, rel[:-len(".__init__")] if rel.endswith(".__init__") else rel


def _is_type_checking(node):
    return isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def _runtime_nodes(tree):
    """Every node but those under ``if TYPE_CHECKING:``: an import only a type checker runs (the frontend's
    Tensor named in the annotations of a lower layer) is not a dependency of the running code."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def imports_of(path):
    """(line, module) for every import of an ember module the running code makes, at any depth."""
    for node in _runtime_nodes(ast.parse(open(path).read())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "ember":
            if node.module in ("ember", "ember._generated"):  # from ember import x: x may be a module
                for a in node.names:
                    yield node.lineno, f"{node.module}.{a.name}"
            else:
                yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "ember":
                    yield node.lineno, a.name


def test_no_layer_imports_a_higher_one():
    bad = []
    for path, mod in modules():
        mine = layer_of_module(mod)
        for line, target in imports_of(path):
            if layer_of_module(target) > mine:
                bad.append(f"{mod}:{line} imports {target}")
    assert not bad, "imports against the layer map (c10 <- aten <- autograd <- frontend):\n" + "\n".join(bad)


def test_frontend_does_not_import_kernels():
    bad = []
    for path, mod in modules():
        if layer_of_module(mod) != FRONTEND:
            continue
        for line, target in imports_of(path):
            if target.startswith("ember.aten.kernels"):
                bad.append(f"{mod}:{line} imports {target}")
    assert not bad, "the frontend calls operators (ember.* or ember._generated.aten), not kernels:\n" + "\n".join(bad)


def test_optimizers_and_serialization_leave_storage_to_the_op_library():
    """Only aten touches a tensor's storage (``_data``) and version counter (``_vc``) on the optimizers' behalf: the
    fused optimizer ops own the arenas, and serialization asks c10 (``ember.c10.arena``) what a slot is."""
    bad = []
    for path, mod in modules():
        if mod.startswith("ember.optim"):
            for node in ast.walk(ast.parse(open(path).read())):
                if isinstance(node, ast.Attribute) and node.attr in ("_data", "_vc"):
                    bad.append(f"{mod}:{node.lineno} uses .{node.attr}")
        for line, target in imports_of(path):
            if mod == "ember.serialization" and target.startswith("ember.optim"):
                bad.append(f"{mod}:{line} imports {target}")
    assert not bad, "\n".join(bad)


def test_the_checks_see_violations(tmp_path):
    """The classifier the two tests above rely on."""
    assert layer_of_module("ember.c10.dtype") == C10 and layer_of_module("ember.aten.kernels.softmax") == ATEN
    assert layer_of_module("ember._generated.aten") == ATEN and layer_of_module("ember._generated.autograd") == AUTOGRAD
    assert layer_of_module("ember._generated.functions") == FRONTEND and layer_of_module("ember") == FRONTEND
    assert layer_of_module("ember.nn.functional") == FRONTEND and layer_of_module("ember.return_types") == ATEN
    src = "def f():\n    import ember\n    from ember import tensor\n"
    probe = tmp_path / "probe.py"
    probe.write_text(src)
    assert sorted(m for _, m in imports_of(str(probe))) == ["ember", "ember.tensor"]
    probe.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ember._tensor import Tensor\n"
                     "else:\n    import ember.nn\n")
    assert [m for _, m in imports_of(str(probe))] == ["ember.nn"]


def test_parity_tests_import_pytorch_through_importorskip():
    """PyTorch is the test oracle only: a test module imports it after ``pytest.importorskip("torch")``, so
    that without PyTorch its parity tests skip with a reason instead of failing at collection."""
    tests = os.path.dirname(os.path.abspath(__file__))
    bad = []
    for root, _, files in os.walk(tests):
        if os.path.join("programs", "torch_scripts") in root:  # PyTorch programs, run as scripts
            continue
        if os.path.join("distributed", "scripts") in root:  # the ranks' programs, run by the launcher
            continue
        if os.path.join("ecosystem", "scripts") in root:  # library programs, run on PyTorch and under ember
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
