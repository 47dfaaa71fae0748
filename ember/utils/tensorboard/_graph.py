"""A model's graph as a TensorBoard ``GraphDef`` (``torch/utils/tensorboard/_pytorch_graph.py``). PyTorch traces
the model with TorchScript; ember traces it with ``make_fx`` (real tensors, so shape checks and Python control flow
run as they do eagerly) in eval mode under ``no_grad``, recording the ATen operators it runs and, for each, the
module scope (``make_fx(record_module_stack=True)``). Nodes are named by that scope as PyTorch's graphs name them:
``input/x``, ``Net/Linear[fc]/weight/weight`` (``prim::GetAttr``), ``Net/Sequential[seq]/ReLU[0]/relu``
(``aten::relu``), ``output/output.1``; numbers and other constant arguments become ``prim::Constant`` nodes.
TensorBoard groups nodes by the ``/`` in their names, so the graph opens as the module tree, each node with its
output shape."""
from __future__ import annotations

import contextlib
import inspect
import operator
from typing import Any, Iterator

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.config_pb2 import RunMetadata
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.step_stats_pb2 import DeviceStepStats, StepStats
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef


@contextlib.contextmanager
def _eval(model: Any) -> Iterator[None]:
    training = model.training
    model.train(False)
    try:
        yield
    finally:
        model.train(training)


def _node(name: str, op: str, inputs: list[str], shape: Any = None, attr: str | None = "") -> NodeDef:
    attrs = {}
    if attr is not None:
        attrs["attr"] = AttrValue(s=attr.encode(encoding="utf_8"))
    if shape is not None:
        attrs["_output_shapes"] = AttrValue(list=AttrValue.ListValue(shape=[TensorShapeProto(
            dim=[TensorShapeProto.Dim(size=int(d)) for d in shape])]))
    return NodeDef(name=name.encode(encoding="utf_8"), op=op, input=inputs, attr=attrs)


def _op_name(target: Any) -> str:
    """``aten::<name>`` of an operator overload (``aten::addmm``), ``prim::TupleUnpack`` for taking an output of a
    multi-output op, the name of anything else called."""
    if target is operator.getitem:
        return "prim::TupleUnpack"
    schema = getattr(target, "_schema", None)
    if schema is not None:
        return str(schema.name)
    return f"aten::{getattr(target, '__name__', str(target))}"


def graph(model: Any, args: Any, verbose: bool = False) -> tuple[GraphDef, RunMetadata]:
    """(GraphDef, RunMetadata) of ``model`` run on ``args`` (a tensor or a tuple of them)."""
    import ember
    from ember.fx.experimental.proxy_tensor import make_fx

    args = args if isinstance(args, (tuple, list)) else (args,) if args is not None else ()
    with _eval(model), ember.no_grad():
        try:
            gm = make_fx(model, record_module_stack=True)(*args)
        except Exception as e:
            print(e)
            print("Error occurs, No graph saved")
            raise
    if verbose:
        print(gm.graph)
    root = type(model).__name__
    modules = dict(model.named_modules())
    owners = {id(t): n for n, t in list(model.named_parameters()) + list(model.named_buffers())}
    names: dict[Any, str] = {}
    nodes: list[NodeDef] = []
    constants = [0]

    def scope_of_path(path: str) -> str:
        """``Net/Sequential[seq]/Linear[1]`` for the module at ``seq.1``."""
        parts, prefix = [root], []
        for part in path.split(".") if path else []:
            prefix.append(part)
            parts.append(f"{type(modules['.'.join(prefix)]).__name__}[{part}]")
        return "/".join(parts)

    def scope(node: Any) -> str:
        stack = list(node.meta.get("nn_module_stack", {}).values())
        return scope_of_path(stack[-1][0]) if stack and stack[-1][0] in modules else root

    def shape_of(node: Any) -> Any:
        val = node.meta.get("val")
        return tuple(val.shape) if isinstance(val, ember.Tensor) else None

    def arg_names(node: Any, where: str) -> list[str]:
        out = []

        def visit(a: Any) -> None:
            if isinstance(a, ember.fx.Node):
                out.append(names[a])
            elif isinstance(a, (tuple, list)):
                for x in a:
                    visit(x)
            elif a is not None:
                name = f"{where}/{constants[0]}"
                constants[0] += 1
                value = f"tensor({a})" if isinstance(a, (int, float, bool)) else str(a)
                nodes.append(_node(name, "prim::Constant", [], () if isinstance(a, (int, float)) else None,
                                   f"{{ value : {value}}}"))
                out.append(name)
        if node.target is operator.getitem:          # an output of a multi-output op: its index is no input
            visit(node.args[0])
            return out
        for a in tuple(node.args) + tuple(node.kwargs.values()):
            visit(a)
        return out

    try:
        params = [p.name for p in inspect.signature(model.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    inputs_seen = 0
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            names[node] = "input/" + (params[inputs_seen] if inputs_seen < len(params) else f"input.{inputs_seen}")
            inputs_seen += 1
            nodes.append(_node(names[node], "IO Node", [], shape_of(node)))
        elif node.op == "get_attr":
            path = owners.get(id(getattr(gm, node.target)))
            if path is not None:      # a parameter or buffer: named by its module and attribute
                module_path, _, attr = path.rpartition(".")
                names[node] = f"{scope_of_path(module_path)}/{attr}/{attr}"
            else:
                names[node] = f"{scope(node)}/{node.target}"
            nodes.append(_node(names[node], "prim::GetAttr", [], shape_of(node),
                               f"{{ name :  {names[node].rsplit('/', 1)[-1]} }}"))
        elif node.op == "call_function":
            where = scope(node)
            inputs = arg_names(node, where)
            names[node] = f"{where}/{node.name}"
            nodes.append(_node(names[node], _op_name(node.target), inputs, shape_of(node), "{}"))
        elif node.op == "output":
            outs = node.args[0] if isinstance(node.args[0], (tuple, list)) else (node.args[0],)
            for i, o in enumerate(outs):
                if isinstance(o, ember.fx.Node):
                    nodes.append(_node(f"output/output.{i + 1}", "IO Node", [names[o]], shape_of(o)))
    stepstats = RunMetadata(step_stats=StepStats(dev_stats=[DeviceStepStats(device="/device:CPU:0")]))
    return GraphDef(node=nodes, versions=VersionDef(producer=22)), stepstats


def onnx_graph(model: Any) -> GraphDef:
    """An ONNX model (a path or a ``ModelProto``) as a GraphDef, as PyTorch's ``add_onnx_graph`` lays it out."""
    import itertools

    import onnx
    graph = (onnx.load(model) if not isinstance(model, onnx.ModelProto) else model).graph
    nodes = []
    for v in itertools.chain(graph.input, graph.output):
        shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=d.dim_value) for d in v.type.tensor_type.shape.dim])
        nodes.append(NodeDef(name=v.name.encode(encoding="utf_8"), op="Variable", input=[],
                             attr={"dtype": AttrValue(type=v.type.tensor_type.elem_type),
                                   "shape": AttrValue(shape=shape)}))
    for n in graph.node:
        params = ", ".join(" = ".join(str(f[1]) for f in a.ListFields()) for a in n.attribute)
        nodes.append(NodeDef(name=n.output[0].encode(encoding="utf_8"), op=n.op_type, input=n.input,
                             attr={"parameters": AttrValue(s=params.encode(encoding="utf_8"))}))
    return GraphDef(node=nodes, versions=VersionDef(producer=22))
