"""safetensors files for ember tensors: the names of ``safetensors.torch`` (``save``, ``load``,
``save_file``, ``load_file``, ``save_model``, ``load_model``) over the ``safetensors`` package's
framework-free core (``serialize`` / ``deserialize``, which validate headers and offsets).  An optional
extra: ``pip install safetensors``.  Every dtype safetensors has that ember has, BF16 included
(complex128 has no safetensors code and is refused with a clear error).
"""
from __future__ import annotations

import os

import numpy as np

import ember
from ember.c10.storage import array_data_ptr, root_array

__all__ = ["save", "load", "save_file", "load_file", "save_model", "load_model"]

_CODES = {"BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "I32": "int32", "I64": "int64",
          "F16": "float16", "BF16": "bfloat16", "F32": "float32", "F64": "float64", "C64": "complex64"}


def _package():
    try:
        import safetensors
    except ImportError:
        raise ImportError("ember.utils.safetensors needs the safetensors package: pip install safetensors") from None
    return safetensors


def _dtype_name(t) -> str:
    return str(t.dtype).split(".")[-1]


def _contiguous_cpu(t) -> np.ndarray:
    arr = t.detach().cpu().numpy()
    return np.ascontiguousarray(arr).reshape(arr.shape)   # (ascontiguousarray makes 0-d arrays 1-d)


def _check_shared(tensors: dict) -> None:
    """safetensors' rule: tensors whose memory overlaps cannot be saved as separate entries."""
    spans = []
    for name, t in tensors.items():
        a = t._data
        if a.size == 0 or t.device.type == "meta":
            continue
        lo = array_data_ptr(a) + sum(min(0, (s - 1) * st) for s, st in zip(a.shape, a.strides))
        hi = array_data_ptr(a) + sum(max(0, (s - 1) * st) for s, st in zip(a.shape, a.strides)) + a.itemsize
        spans.append((id(root_array(a)), lo, hi, name))
    spans.sort()
    groups, current = [], []
    for key, lo, hi, name in spans:
        if current and current[-1][0] == key and lo < max(h for _, _, h, _ in current):
            current.append((key, lo, hi, name))
        else:
            if len(current) > 1:
                groups.append(sorted(n for *_, n in current))
            current = [(key, lo, hi, name)]
    if len(current) > 1:
        groups.append(sorted(n for *_, n in current))
    if groups:
        raise RuntimeError(f"Some tensors share memory, this will lead to duplicate memory on disk and potential "
                           f"differences when loading them again: {groups}.\nA potential way to correctly save your "
                           "model is to use `save_model`.\nMore information at "
                           "https://huggingface.co/docs/safetensors/torch_shared_tensors")


def _specs(tensors: dict):
    st = _package()
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, torch.Tensor] but received {type(tensors)}")
    invalid = {k for k, v in tensors.items() if not isinstance(v, ember.Tensor)}
    if invalid:
        raise ValueError(f"Key `{invalid}` is invalid, expected torch.Tensor but received "
                         f"{type(tensors[next(iter(invalid))])}")
    _check_shared(tensors)
    keep, specs = [], {}
    for name, t in tensors.items():
        if t.dtype == ember.complex128:
            raise ValueError(f"safetensors has no dtype code for complex128 (tensor {name!r})")
        arr = _contiguous_cpu(t)
        keep.append(arr)
        specs[name] = st.TensorSpec(dtype=_dtype_name(t), shape=list(arr.shape),
                                    data_ptr=arr.ctypes.data if arr.size else 0, data_len=arr.nbytes)
    return st, specs, keep


def save(tensors: dict, metadata: dict | None = None) -> bytes:
    """The safetensors bytes of ``{name: tensor}``."""
    st, specs, keep = _specs(tensors)
    out = st.serialize(specs, metadata)
    del keep
    return bytes(out)


def save_file(tensors: dict, filename, metadata: dict | None = None) -> None:
    """Write ``{name: tensor}`` to a ``.safetensors`` file."""
    st, specs, keep = _specs(tensors)
    st.serialize_file(specs, os.fspath(filename), metadata)
    del keep


def _from_entries(entries, device) -> dict:
    out = {}
    for name, info in entries:
        code = info["dtype"]
        if code not in _CODES:
            raise ValueError(f"safetensors dtype {code} has no ember dtype")
        dtype = getattr(ember, _CODES[code])
        arr = np.frombuffer(info["data"], dtype=dtype.np).reshape(info["shape"])
        t = ember.from_numpy(arr)
        out[name] = t if str(device) == "cpu" else t.to(device)
    return out


def load(data: bytes, device="cpu") -> dict:
    """``{name: tensor}`` from safetensors bytes."""
    st = _package()
    return _from_entries(st.deserialize(bytes(data)), device)


def load_file(filename, device="cpu") -> dict:
    """``{name: tensor}`` from a ``.safetensors`` file."""
    st = _package()
    with open(filename, "rb") as f:
        data = f.read()
    return _from_entries(st.deserialize(data), device)


def save_model(model, filename, metadata: dict | None = None, force_contiguous: bool = False) -> None:
    """Save ``model.state_dict()``, keeping one name for tensors that share memory (tied weights)."""
    state = model.state_dict()
    keep: dict = {}
    seen: dict = {}
    for name, t in state.items():
        key = (id(root_array(t._data)), array_data_ptr(t._data) if t.numel() else name, tuple(t.shape),
               t.stride())
        if key in seen:
            continue
        seen[key] = name
        keep[name] = t.contiguous() if force_contiguous else t
    save_file(keep, filename, metadata)


def load_model(model, filename, strict: bool = True, device="cpu"):
    """Load a ``save_model`` file into ``model``; returns ``(missing, unexpected)`` key lists."""
    state = load_file(filename, device=device)
    result = model.load_state_dict(state, strict=False)
    missing = [k for k in result.missing_keys if k not in _tied_names(model, state)]
    unexpected = list(result.unexpected_keys)
    if strict and (missing or unexpected):
        msg = ", ".join([f"Missing key(s): {missing}"] * bool(missing) + [f"Unexpected key(s): {unexpected}"]
                        * bool(unexpected))
        raise RuntimeError(f"Error(s) in loading state_dict for {type(model).__name__}:\n    {msg}")
    return missing, unexpected


def _tied_names(model, loaded) -> set:
    """State-dict names that alias a loaded tensor of the model (tied weights dropped by save_model)."""
    state = model.state_dict()
    by_key: dict = {}
    for name, t in state.items():
        by_key.setdefault((id(root_array(t._data)), array_data_ptr(t._data), tuple(t.shape)), []).append(name)
    tied = set()
    for names in by_key.values():
        if any(n in loaded for n in names):
            tied.update(n for n in names if n not in loaded)
    return tied
