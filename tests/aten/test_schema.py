"""The schema model: every YAML schema round-trips; malformed YAML is reported with file and line."""
import os

import pytest

import ember
from tools.codegen.model import FunctionSchema, SchemaError, load_native_functions

YAML = os.path.join(os.path.dirname(ember.__file__), "aten", "native_functions.yaml")


def test_every_schema_round_trips():
    nfs = load_native_functions(YAML)
    assert len(nfs) > 600
    for nf in nfs:
        s = str(nf.schema)
        assert str(FunctionSchema.parse(s)) == s


@pytest.mark.parametrize("schema,inplace,out,view", [
    ("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", False, False, False),
    ("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)", True, False, False),
    ("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)", False, True, False),
    ("transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", False, False, True),
    ("split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]", False, False, True),
    ("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)", False, False, False),
])
def test_schema_properties(schema, inplace, out, view):
    s = FunctionSchema.parse(schema)
    assert str(s) == schema
    assert (s.is_inplace, s.is_out, s.is_view) == (inplace, out, view)


def test_parse_errors_name_file_and_line(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("- func: ok(Tensor self) -> Tensor\n\n- func: broken(Tensr self) -> Tensor\n")
    with pytest.raises(SchemaError, match=r"bad\.yaml:3: unknown type 'Tensr'"):
        load_native_functions(str(p))
    p.write_text("- func: a(Tensor self) -> Tensor\n- func: a(Tensor self) -> Tensor\n")
    with pytest.raises(SchemaError, match=r"bad\.yaml:2: duplicate operator a"):
        load_native_functions(str(p))
    p.write_text("- func: a(Tensor self) -> Tensor\n  dispatsh: {}\n")
    with pytest.raises(SchemaError, match=r"bad\.yaml:1: unknown key"):
        load_native_functions(str(p))
