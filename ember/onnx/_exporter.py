"""The ONNX exporter.

Note [ONNX export]
``export`` traces the model with ``make_fx`` on the example arguments (eval mode, no grad), which records the ATen
operators it runs after their decompositions, each with the Python line that called it. Each operator becomes
ONNX nodes through the translation table of ``_translations.py``. Parameters and buffers become initializers named
by their module paths (``fc.weight``), other captured tensors constants. Graph inputs and outputs take
``input_names`` / ``output_names``, or ``input_0``... / ``output_0``...

Dynamic axes. A trace records concrete sizes (``view(x, [2, 64])`` for ``x.view(x.size(0), -1)``). To learn which
recorded integers depend on a dynamic axis, the model is traced once more per dynamic size, with that axis one
larger. The graphs must have the same operators, in the same order; an integer argument that changes is a
function of the size: ``c * S`` (a size scaled, or multiplied with others: flattening) or ``S + c`` (a size
shifted), found from the two values and checked against each size's trace. In the ONNX graph such an integer is
computed at run time from ``Shape`` of the input that carries the axis; a recorded integer that matches neither
form is an error naming the operator and its source line.
"""
from __future__ import annotations

import contextlib
import os
from typing import Any, Iterator

import numpy as np

import ember
from ember.aten.context import global_context
from ember.onnx.errors import OnnxExporterError

__all__ = ["export", "is_in_onnx_export", "ONNXProgram"]

_exporting = [False]


def is_in_onnx_export() -> bool:
    """Whether an export is tracing the model right now (a model may take another path while exported)."""
    return _exporting[0]


class ONNXProgram:
    """What ``export`` returns with ``dynamo=True``: the ``model_proto``, ``save(path)``, and calling it runs the
    model in onnxruntime."""

    def __init__(self, model_proto: Any) -> None:
        self.model_proto = model_proto
        self._session: Any = None

    def save(self, destination: Any, **_: Any) -> None:
        _write(self.model_proto, destination)

    def __call__(self, *args: Any) -> list[Any]:
        import onnxruntime
        if self._session is None:
            self._session = onnxruntime.InferenceSession(self.model_proto.SerializeToString(),
                                                         providers=["CPUExecutionProvider"])
        feeds = {i.name: _numpy(a) for i, a in zip(self._session.get_inputs(), args)}
        return list(self._session.run(None, feeds))

    def __repr__(self) -> str:
        import onnx
        return f"ONNXProgram(\n{onnx.printer.to_text(self.model_proto.graph)}\n)"


def _numpy(a: Any) -> np.ndarray:
    return a.detach().cpu().numpy() if isinstance(a, ember.Tensor) else np.asarray(a)


def _write(proto: Any, f: Any) -> None:
    """The model to a path (atomically: a temporary file renamed) or to a binary file object."""
    data = proto.SerializeToString()
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        tmp = path + ".tmp"
        with open(tmp, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    else:
        f.write(data)


@contextlib.contextmanager
def _mode(model: Any, training: Any) -> Iterator[None]:
    from ember.onnx import TrainingMode
    was = getattr(model, "training", None)
    if was is not None and training != TrainingMode.PRESERVE:
        model.train(training == TrainingMode.TRAINING)
    try:
        yield
    finally:
        if was is not None:
            model.train(was)


def export(model: Any, args: Any = (), f: Any = None, *, kwargs: dict[str, Any] | None = None,
           verbose: bool | None = None, input_names: Any = None, output_names: Any = None,
           opset_version: int | None = None, dynamo: bool = True, external_data: bool = True,
           dynamic_shapes: Any = None, custom_translation_table: Any = None, report: bool = False,
           optimize: bool = True, verify: bool = False, profile: bool = False, dump_exported_program: bool = False,
           artifacts_dir: Any = ".", export_params: bool = True, keep_initializers_as_inputs: bool = False,
           dynamic_axes: Any = None, training: Any = None, operator_export_type: Any = None,
           do_constant_folding: bool = True, custom_opsets: Any = None, export_modules_as_functions: Any = False,
           autograd_inlining: bool = True, fallback: bool = False) -> ONNXProgram | None:
    """Export ``model`` run on ``args`` (a tuple, or one tensor; a trailing dict is keyword arguments, as in
    PyTorch's older API) as an ONNX model written to ``f`` (a path or a binary file object), Note [ONNX export].
    ``dynamic_axes`` ({name: {axis: "name"} or [axes]}) makes input / output sizes symbolic; ``opset_version``
    defaults to 18 (``dynamo=True``, the default, which returns an ``ONNXProgram``) or 20 (``dynamo=False``);
    ``export_params=False`` makes the parameters graph inputs instead of initializers; ``do_constant_folding``
    computes nodes whose inputs are all constants (a weight's transpose) at export. The model passes
    ``onnx.checker``."""

    from ember.onnx import TrainingMode
    from ember.onnx._graph import build
    if training is None:
        training = TrainingMode.EVAL
    opset = opset_version if opset_version is not None else (18 if dynamo else 20)
    if not 17 <= opset <= 23:
        raise OnnxExporterError(f"Unsupported ONNX opset version: {opset}; ember exports opsets 17 to 23")
    if isinstance(args, tuple):
        args = list(args)
    elif isinstance(args, list):
        args = list(args)
    else:
        args = [args]
    if args and isinstance(args[-1], dict) and kwargs is None:
        kwargs = args.pop()
    kwargs = dict(kwargs or {})
    from ember.export import ExportedProgram
    if dynamo and (dynamic_axes is None or isinstance(model, ExportedProgram)):
        proto = _export_program(model, args, kwargs, dynamic_shapes, training, opset=opset,
                                input_names=list(input_names or []), output_names=list(output_names or []),
                                export_params=export_params, keep_initializers_as_inputs=keep_initializers_as_inputs,
                                do_constant_folding=do_constant_folding)
        return _finish(proto, f, verbose, dynamo)
    if dynamic_shapes is not None and dynamic_axes is None:
        dynamic_axes = _axes_from_dynamic_shapes(model, args, dynamic_shapes)
    _exporting[0] = True
    as_pytorch = global_context.rnn_layers_as_pytorch_when_observed
    global_context.rnn_layers_as_pytorch_when_observed = False    # the fused layers have ONNX's LSTM / GRU / RNN
    try:
        with _mode(model, training):
            proto = build(model, args, kwargs, opset=opset, input_names=list(input_names or []),
                          output_names=list(output_names or []), dynamic_axes=dynamic_axes or {},
                          export_params=export_params, keep_initializers_as_inputs=keep_initializers_as_inputs,
                          do_constant_folding=do_constant_folding)
    finally:
        _exporting[0] = False
        global_context.rnn_layers_as_pytorch_when_observed = as_pytorch
    return _finish(proto, f, verbose, dynamo)


def _finish(proto: Any, f: Any, verbose: bool | None, dynamo: bool) -> ONNXProgram | None:
    import onnx
    onnx.checker.check_model(proto, full_check=True)
    if verbose:
        print(onnx.printer.to_text(proto.graph))
    if f is not None:
        _write(proto, f)
    return ONNXProgram(proto) if dynamo else None


def _export_program(model: Any, args: list[Any], kwargs: dict[str, Any], dynamic_shapes: Any, training: Any, *,
                    opset: int, input_names: list[str], output_names: list[str], export_params: bool,
                    keep_initializers_as_inputs: bool, do_constant_folding: bool) -> Any:
    """``dynamo=True``: the model through ``ember.export`` (an ``ExportedProgram`` is taken as it is), its graph
    functionalized (``run_decompositions`` with an empty table: composite ops below autograd, as the tracer records
    them), then each operator translated (Note [ONNX export]). A dimension named by a string in ``dynamic_shapes``
    is a ``Dim`` of that name, and the ONNX input's dimension keeps the name."""
    from ember.export import Dim, ExportedProgram, export as export_program
    from ember.onnx._graph import build_program
    if isinstance(model, ExportedProgram):
        ep = model
    else:
        named: dict[str, Any] = {}

        def dim(v: Any) -> Any:
            return named.setdefault(v, Dim(v)) if isinstance(v, str) else v

        def convert(spec: Any) -> Any:
            if isinstance(spec, dict):
                return {k: (convert(v) if isinstance(v, (dict, list, tuple)) and not isinstance(k, int) else dim(v))
                        for k, v in spec.items()}
            if isinstance(spec, (list, tuple)):
                return type(spec)(convert(v) if isinstance(v, (dict, list, tuple)) else dim(v) for v in spec)
            return spec
        as_pytorch = global_context.rnn_layers_as_pytorch_when_observed
        global_context.rnn_layers_as_pytorch_when_observed = False   # the fused layers have ONNX's LSTM / GRU
        _exporting[0] = True
        try:
            with _mode(model, training):
                ep = export_program(model, tuple(args), kwargs, dynamic_shapes=convert(dynamic_shapes))
        finally:
            _exporting[0] = False
            global_context.rnn_layers_as_pytorch_when_observed = as_pytorch
    return build_program(ep.run_decompositions({}), opset=opset, input_names=input_names, output_names=output_names,
                         export_params=export_params, keep_initializers_as_inputs=keep_initializers_as_inputs,
                         do_constant_folding=do_constant_folding)


def _axes_from_dynamic_shapes(model: Any, args: list[Any], dynamic_shapes: Any) -> dict[str, Any]:
    """``dynamic_shapes`` ({argument name: {axis: name}} or a tuple per argument) as ``dynamic_axes``."""
    import inspect
    names = [p.name for p in inspect.signature(model.forward).parameters.values()][:len(args)]
    axes: dict[str, Any] = {}
    items = dynamic_shapes.items() if isinstance(dynamic_shapes, dict) else zip(names, dynamic_shapes)
    for name, spec in items:
        if spec is None:
            continue
        if isinstance(spec, dict):
            axes[name] = {int(k): (v if isinstance(v, str) else getattr(v, "__name__", f"{name}_dim_{k}"))
                          for k, v in spec.items()}
        else:
            axes[name] = {i: (v if isinstance(v, str) else f"{name}_dim_{i}") for i, v in enumerate(spec)
                          if v is not None}
    return axes

