"""Generated code is fresh: ``python -m tools.codegen --check`` regenerates and compares."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_generated_code_is_fresh():
    r = subprocess.run([sys.executable, "-m", "tools.codegen", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_check_detects_a_stale_file(tmp_path):
    from tools.codegen import gen
    files = gen.generate()
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert gen.check(str(tmp_path)) == []
    (tmp_path / "functions.py").write_text("# edited by hand\n")
    assert gen.check(str(tmp_path)) == ["functions.py"]


def test_bindings_cover_namespaces():
    import ember
    assert callable(ember.add) and callable(ember.Tensor.add_) and callable(ember.linalg.inv)
    assert callable(ember.special.erf) and callable(ember.nn.functional.relu6)
    import ember.fft  # noqa: F401 - the namespace exists (its ops land with a later issue)


def test_readme_states_the_op_count():
    import re

    from tools.codegen.model import load_native_functions
    n = len(load_native_functions(os.path.join(ROOT, "ember", "aten", "native_functions.yaml")))
    text = open(os.path.join(ROOT, "README.md")).read()
    m = re.search(r"(\d+) overloads in `native_functions.yaml`", text)
    assert m and int(m.group(1)) == n, f"README.md should state {n} overloads"


def test_bindings_describe_themselves():
    """Note [Binding docstrings]: help() and inspect.signature show what a binding takes."""
    import inspect

    import ember
    from ember._generated import functions, tensor_methods
    for mod in (functions, tensor_methods):
        for name in mod.__all__:
            doc = getattr(mod, name).__doc__
            assert doc and f"{name}(" in doc, f"{mod.__name__}.{name} has no docstring"
    assert str(inspect.signature(ember.exp)) == "(input, *, out=None)"
    assert list(inspect.signature(ember.Tensor.exp).parameters) == ["self"]
    assert ember.add.__doc__.startswith("Adds ``other``") and "other: Number" in ember.add.__doc__


def test_docs_table_names_operators():
    import runpy

    from tools.codegen.gen import ROOT, YAML_PATH
    from tools.codegen.model import load_native_functions
    names = {nf.schema.name for nf in load_native_functions(YAML_PATH)}
    docs = runpy.run_path(os.path.join(ROOT, "ember", "_torch_docs.py"))["DOCS"]
    assert not sorted(set(docs) - names), "ember/_torch_docs.py documents ops that do not exist"
