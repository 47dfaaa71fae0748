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


# ------------------------------------------------------------------------------ the frontend's sub-layers
# Above autograd, the frontend is layered as PyTorch's Python packages are: tensor (``Tensor``, the bindings, the
# ``torch.*`` namespaces) < nn / optim / data / amp / distributions / ao < fx (with fake tensors and
# decompositions) < _dynamo < _inductor; the tools (onnx, profiler, tensorboard, distributed, the torchvision
# extension, the launcher) sit above what they use.
TENSOR, NN, FX, DYNAMO, INDUCTOR, TOOLS = range(6)
SUBLAYERS = {
    NN: ("nn", "optim", "utils.data", "utils.checkpoint", "utils.model_zoo", "amp", "cpu.amp", "cuda.amp",
         "distributions", "ao", "quantization", "jit", "hub", "serialization", "_weights_only_unpickler", "testing"),
    FX: ("fx", "_subclasses", "_decomp", "_functorch", "func", "library", "_custom_ops", "_higher_order_ops"),
    DYNAMO: ("_dynamo", "compiler", "export"),
    INDUCTOR: ("_inductor",),
    TOOLS: ("onnx", "profiler", "utils.tensorboard", "distributed", "extensions", "demo", "__main__",
            "_torch_shim", "_initialize"),
}
# imports against the sub-layers that PyTorch's own packages make too, each with its reason
SUBLAYER_EXCEPTIONS = {
    ("ember.nn.modules.batchnorm", "ember.distributed"): "SyncBatchNorm reduces statistics across ranks",
    ("ember.nn.parallel.distributed", "ember.distributed"): "DistributedDataParallel is nn's",
    ("ember.utils.data.distributed", "ember.distributed"): "DistributedSampler reads the rank",
    ("ember.ao.quantization.quantize_fx", "ember.fx"): "FX graph mode quantization",
    ("ember._dynamo.backends", "ember._inductor"): "the 'inductor' backend of the registry",
    ("ember._dynamo.backends.common", "ember._inductor"): "aot_autograd partitions with inductor's partitioner",
    ("ember._dynamo.eval_frame", "ember._inductor"): "dynamic sizes are probed by inductor's code generator",
    ("ember._ops", "ember.extensions"): "ops.load_library registers a known library's operators",
    ("ember.random", "ember.utils.data"): "thread_safe_generator asks the DataLoader worker it runs in",
    ("ember._C", "ember.nn"): "torch._C._nn is nn.functional's C implementation",
    ("ember._functional", "ember.nn"): "torch.selu is nn.functional's selu",
}


def sublayer_of(name):
    rest = name[len("ember."):] if name.startswith("ember.") else ""
    best, best_len = TENSOR, 0
    for layer, prefixes in SUBLAYERS.items():
        for p in prefixes:
            if (rest == p or rest.startswith(p + ".")) and len(p) > best_len:
                best, best_len = layer, len(p)
    return best


def _exception(mod, target):
    return any(mod == m and (target == t or target.startswith(t + ".")) for m, t in SUBLAYER_EXCEPTIONS)


def test_frontend_sublayers():
    bad = []
    for path, mod in modules():
        if layer_of_module(mod) != FRONTEND or mod == "ember":   # the package itself imports everything
            continue
        mine = sublayer_of(mod)
        for line, target in imports_of(path):
            if layer_of_module(target) == FRONTEND and target != "ember" and sublayer_of(target) > mine and \
                    mine != TOOLS and not _exception(mod, target):
                bad.append(f"{mod}:{line} imports {target}")
    assert not bad, "imports against the frontend's sub-layers (tensor < nn < fx < _dynamo < _inductor):\n" + \
        "\n".join(bad)
    assert sublayer_of("ember.utils.data.dataloader") == NN and sublayer_of("ember.utils.hooks") == TENSOR
    assert sublayer_of("ember._inductor.codegen") == INDUCTOR and sublayer_of("ember.utils.tensorboard") == TOOLS


def test_modules_register_nothing_at_import():
    """Note [Initialization]: kernels, fallbacks and Tensor methods are registered by ``ember/_initialize.py`` in its
    stated order, never as a side effect of importing a module."""
    registering = {"register_fallback", "register_kernels", "register", "install", "install_methods",
                   "register_layout_kernels"}
    bad = []
    for path, mod in modules():
        if mod == "ember._initialize":
            continue
        for stmt in ast.parse(open(path).read()).body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
                continue
            for node in ast.walk(stmt):
                if isinstance(node, ast.Call):
                    f = node.func
                    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
                    if name in registering:
                        bad.append(f"{mod}:{node.lineno} calls {name}() at import")
    assert not bad, "\n".join(bad)


# function-level imports: each should break a real import cycle or keep an optional or heavy module off the start
# (PyTorch's ``torch._dynamo`` is loaded on first use too); the budget only goes down
FUNCTION_LEVEL_IMPORT_BUDGET = 571


def test_function_level_import_budget():
    count = 0
    for path, _mod in modules():
        for node in ast.walk(ast.parse(open(path).read())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                count += sum(isinstance(n, (ast.Import, ast.ImportFrom)) for n in ast.walk(node))
    assert count <= FUNCTION_LEVEL_IMPORT_BUDGET, f"{count} function-level imports"


# Note [Capture interface]: the core reports to graph capture only through ember.c10.compile_state's functions and
# the methods of the Capture it installs; what a capture keeps (fresh modules, whether it ran backward, ...) is its own
CAPTURE_PACKAGES = ("ember._dynamo", "ember._inductor", "ember.c10.compile_state")


def test_the_core_reaches_capture_through_one_interface():
    import re
    from ember.c10 import compile_state
    from ember._dynamo.capture import _Watcher
    interface = set(compile_state.__all__)
    methods = {n for n in vars(compile_state.Capture) if not n.startswith("_")}
    assert all(getattr(_Watcher, m) is not getattr(compile_state.Capture, m) for m in methods)
    bad = []
    for path, mod in modules():
        if mod.startswith(CAPTURE_PACKAGES) or ".".join(mod.split(".")[:2]) == "ember._generated":
            continue
        tree = ast.parse(open(path, encoding="utf-8").read())
        aliases = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                   for a in node.names if node.module == "ember.c10" and a.name == "compile_state"}
        captures = set()        # names bound to state.capturing
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and re.search(r"\.capturing$", ast.unparse(node.value)):
                captures |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                if node.value.id in aliases and node.attr not in interface:
                    bad.append(f"{mod}:{node.lineno}: compile_state.{node.attr}")
                if node.value.id in captures and node.attr not in methods:
                    bad.append(f"{mod}:{node.lineno}: capture.{node.attr}")
    assert not bad, "outside the capture interface:\n" + "\n".join(bad)
