"""``ember.save`` / ``ember.load`` in PyTorch's checkpoint format (mirrors ``torch/serialization.py``).

Files are PyTorch's zip archives: ``<name>/data.pkl`` (a protocol-2 pickle in which every tensor is
``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, OrderedDict())`` and every
storage a persistent id ``('storage', torch.FloatStorage, key, location, numel)``), one ``data/<key>``
record per storage (views of one array share it, as in PyTorch), ``byteorder``, ``version`` and the
small metadata records, each record 64-byte aligned.  The pickle names only ``torch`` globals, so
``torch.load(weights_only=True)`` reads ember's files and ember reads PyTorch's.

Loading is safe by default (``weights_only=True``, as PyTorch >= 2.6): the pickle runs on ember's own
interpreter of the protocol-2 opcodes (``_WeightsUnpickler``), which never imports anything: a global must
be on the allowlist (tensor rebuild functions, dtypes, storages, ``OrderedDict``, ``Counter``, ``Size``,
``device``, ``Parameter``, ``set``/``complex``/``bytearray``, ``_codecs.encode``) or added with
``add_safe_globals`` / ``safe_globals``; ``sys``, ``os``, ``posix`` and ``nt`` are refused always.  Every
storage a pickle refers to must be a record of the archive with exactly the declared size, and every
tensor must lie inside its storage.  Archives are checked before anything is read (one top folder, no
duplicate or escaping names, stored not compressed records, a ``version`` of 1..10); TorchScript and
legacy tar archives are refused.  ``weights_only=False`` unpickles arbitrary objects, and only when asked
(or when ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` is set and ``weights_only`` was not passed).

``save`` to a path writes a temporary file in the same folder, flushes and fsyncs it and renames it over
the target, so an interrupted save leaves the previous file intact.
"""
from __future__ import annotations

import contextlib
import io
import os
import pickle
import struct
import sys
import tarfile
import tempfile
import types
import zlib
import warnings
import zipfile
from collections import OrderedDict

import numpy as np

import ember
from ember._utils import _STORAGE_NAMES, _Storage, _StorageType, _dtype_name, _get_layout, _sparse_parts  # noqa: F401
from ember._weights_only_unpickler import (_PY2_MODULES, _allowed_globals, _ascii, _user_globals,  # noqa: F401
                                           _WeightsUnpickler, add_safe_globals, clear_safe_globals, get_safe_globals,
                                           safe_globals)
from ember.c10 import arena
from ember.c10.storage import array_data_ptr, root_array
from ember.c10.tensor_impl import contiguous_strides

__all__ = ["save", "load", "add_safe_globals", "safe_globals", "get_safe_globals", "clear_safe_globals",
           "get_unsafe_globals_in_checkpoint", "DEFAULT_PROTOCOL"]

DEFAULT_PROTOCOL = 2
MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001
_ALIGNMENT = 64

UNSAFE_MESSAGE = (
    "In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` from `False` to "
    "`True`. Re-running `torch.load` with `weights_only` set to `False` will likely succeed, but it can result in "
    "arbitrary code execution. Do it only if you got the file from a trusted source.")

# ---------------------------------------------------------------------------------------------------
# the full (weights_only=False) unpickler: torch names resolve to ember's
# ---------------------------------------------------------------------------------------------------

class _FullUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        full = f"{module}.{name}"
        allowed = _allowed_globals()
        if full in allowed:
            return allowed[full]
        if module == "torch" or module.startswith("torch."):
            module = "ember" + module[len("torch"):]
        return super().find_class(module, name)


def _unpickle(data: bytes, persistent_load, weights_only: bool, pickle_module=None):
    if weights_only:
        return _WeightsUnpickler(data, persistent_load).load()
    if pickle_module is not None and pickle_module is not pickle:
        up = pickle_module.Unpickler(io.BytesIO(data))
    else:
        up = _FullUnpickler(io.BytesIO(data))
    up.persistent_load = persistent_load
    return up.load()


def _wo_message(message: str) -> str:
    if "Unsupported global" in message:
        return ("Weights only load failed. This file can still be loaded, to do so you have two options, do those "
                f"steps only if you trust the source of the checkpoint. \n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, "
                "to load with `weights_only=True` please check the recommended steps in the following error "
                "message.\n\tWeightsUnpickler error: " + message)
    return f"Weights only load failed. {UNSAFE_MESSAGE}\n WeightsUnpickler error: {message}"


# ---------------------------------------------------------------------------------------------------
# load
# ---------------------------------------------------------------------------------------------------

def _resolve_location(location: str, map_location):
    """The device a storage saved at ``location`` goes to, or a callable's result."""
    if map_location is None:
        dev = ember.device(location)
        if dev.type == "cuda" and not ember.cuda.is_available():
            raise RuntimeError("Attempted to deserialize object on a CUDA device but torch.cuda.is_available() is "
                               "False. If you are running on a CPU-only machine, please use torch.load with "
                               "map_location=torch.device('cpu') to map your storages to the CPU.")
        return dev
    if isinstance(map_location, dict):
        return _resolve_location(map_location.get(location, location), None)
    if isinstance(map_location, (str, ember.device)):
        return ember.device(map_location)
    raise TypeError(f"unsupported map_location {map_location!r}")


def _make_storage(raw, dtype, location, map_location, byteorder):
    flat = raw.view(dtype.np) if dtype.np != np.uint8 else raw
    if byteorder != sys.byteorder and dtype.itemsize > 1:
        flat = flat.byteswap()
    if callable(map_location) and not isinstance(map_location, (str, dict, ember.device)):
        storage = _Storage(flat, ember.device("cpu"))
        result = map_location(storage, location)
        return result if isinstance(result, _Storage) else storage
    return _Storage(flat, _resolve_location(location, map_location))


# What zipfile raises on a damaged archive besides BadZipFile (a negative seek, an unknown zip version or flag,
# truncated data): each becomes PyTorch's reader error, as every failure to read an archive is in PyTorch.
_ZIP_DAMAGE = (zipfile.BadZipFile, ValueError, NotImplementedError, EOFError, OSError, struct.error, zlib.error)


def _open_archive(fh) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(fh)
    except _ZIP_DAMAGE as e:
        raise RuntimeError(f"PytorchStreamReader failed reading zip archive: {e} (is the file truncated or "
                           "corrupted?)") from None


def _read_record(zf: zipfile.ZipFile, info) -> bytes:
    try:
        return zf.read(info)
    except _ZIP_DAMAGE as e:
        name = info.filename if isinstance(info, zipfile.ZipInfo) else info
        raise RuntimeError(f"PytorchStreamReader failed reading file {name}: invalid header or archive is "
                           f"corrupted ({e})") from None


def _check_archive(zf: zipfile.ZipFile):
    """The archive's folder name and records, after PyTorch's structural checks and ember's stricter ones."""
    infos = zf.infolist()
    if not infos:
        raise RuntimeError("PytorchStreamReader failed reading zip archive: the archive is empty")
    names = [i.filename for i in infos]
    if len(names) != len(set(names)):
        raise RuntimeError("the checkpoint archive has duplicate records: it is corrupt or malicious")
    prefix = names[0].split("/")[0]
    records = {}
    for info in infos:
        name = info.filename
        if "/" not in name:
            raise RuntimeError("PytorchStreamReader failed locating file: file in archive is not in a subdirectory")
        top, rest = name.split("/", 1)
        if top != prefix or name.startswith("/") or ".." in name.split("/") or "\\" in name:
            raise RuntimeError(f"the checkpoint archive has a record outside its folder: {name!r}")
        if info.compress_type != zipfile.ZIP_STORED:
            raise RuntimeError(f"the checkpoint record {name!r} is compressed; checkpoints store records "
                               "uncompressed (refusing a possible zip bomb)")
        records[rest] = info
    if "constants.pkl" in records:
        return prefix, records, True
    if "data.pkl" not in records:
        raise RuntimeError("PytorchStreamReader failed locating file data.pkl: file not found")
    if "version" not in records:
        raise RuntimeError('PytorchStreamReader failed reading zip archive: Expected hasRecord("version") to be true')
    version = _read_record(zf, records["version"]).strip()
    if not version.isdigit() or not 1 <= int(version) <= 10:
        raise RuntimeError(f"PytorchStreamReader: unsupported archive version {version!r} (expected 1 to 10)")
    return prefix, records, False


def _data_offset(f, info) -> int:
    """Where a stored record's bytes start in the file (after its local header)."""
    f.seek(info.header_offset)
    header = f.read(30)
    if len(header) != 30 or header[:4] != b"PK\x03\x04":
        raise RuntimeError("the checkpoint archive is corrupt (bad local header)")
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    return info.header_offset + 30 + name_len + extra_len


def _load_zip(f, path, map_location, weights_only, mmap, pickle_module):
    with _open_archive(f) as zf:
        prefix, records, torchscript = _check_archive(zf)
        if torchscript:
            if weights_only:
                raise RuntimeError("Cannot use weights_only=True with TorchScript archives passed to torch.load. "
                                   + UNSAFE_MESSAGE)
            raise RuntimeError("ember cannot load TorchScript archives (torch.jit); save a state_dict instead")
        byteorder = "little"
        if "byteorder" in records:
            byteorder = _read_record(zf, records["byteorder"]).decode("ascii", "replace").strip()
            if byteorder not in ("little", "big"):
                raise RuntimeError(f"the checkpoint's byteorder record is {byteorder!r}, not 'little' or 'big'")
        mapped = None
        if mmap:
            mapped = np.memmap(path, dtype=np.uint8, mode="c")
        loaded: dict = {}

        def persistent_load(pid):
            if isinstance(pid, int) or len(pid) != 5:
                raise pickle.UnpicklingError(f"unsupported storage reference {pid!r}")
            _, storage_type, key, location, numel = pid
            key, location = _ascii(key), _ascii(location)
            if not isinstance(storage_type, _StorageType):
                raise pickle.UnpicklingError(f"unsupported storage type {storage_type!r}")
            if not isinstance(key, str) or not isinstance(location, str) or not isinstance(numel, int) or numel < 0:
                raise pickle.UnpicklingError(f"malformed storage reference {pid!r}")
            dtype = storage_type.dtype
            if key in loaded:
                s = loaded[key]
                if s.array.dtype != dtype.np:
                    raise RuntimeError(f"storage {key} is referenced with two different dtypes")
                return s
            info = records.get(f"data/{key}")
            if info is None:
                raise RuntimeError(f"the checkpoint refers to storage {key}, which is not in the archive")
            nbytes = numel * dtype.itemsize
            if info.file_size != nbytes:
                raise RuntimeError(f"storage {key} declares {numel} elements of {_dtype_name(dtype)} ({nbytes} bytes) "
                                   f"but its record holds {info.file_size} bytes: the checkpoint is corrupt")
            if mapped is not None:
                start = _data_offset(f, info)
                raw = mapped[start:start + nbytes]
                if raw.size != nbytes:
                    raise RuntimeError(f"storage {key} runs past the end of the file: the checkpoint is truncated")
            else:
                raw = np.frombuffer(bytearray(_read_record(zf, info)), dtype=np.uint8)
            s = loaded[key] = _make_storage(raw, dtype, location, map_location, byteorder)
            return s

        data = _read_record(zf, records["data.pkl"])
        return _unpickle(data, persistent_load, weights_only, pickle_module)


def _load_legacy(data: bytes, map_location, weights_only, pickle_module):
    """PyTorch's pre-1.6 stream: magic, protocol, sys info, the object, the storage keys, then each storage
    as an int64 element count followed by its bytes."""
    buf = io.BytesIO(data)

    def next_pickle(persistent_load=None):
        start = buf.tell()
        end = _pickle_end(data, start)
        buf.seek(end)
        return _unpickle(data[start:end], persistent_load or _no_persistent, weights_only, pickle_module)

    magic = next_pickle()
    if magic != MAGIC_NUMBER:
        raise RuntimeError("Invalid magic number; corrupt file?")
    protocol = next_pickle()
    if protocol != PROTOCOL_VERSION:
        raise RuntimeError(f"Invalid protocol version: {protocol}")
    sys_info = next_pickle()
    little = sys_info.get("little_endian", True) if isinstance(sys_info, dict) else True
    pending: dict = {}

    def persistent_load(pid):
        if isinstance(pid, int) or len(pid) != 6:
            raise pickle.UnpicklingError(f"unsupported storage reference {pid!r}")
        _, storage_type, key, location, numel, view_metadata = pid
        key, location = _ascii(key), _ascii(location)
        if not isinstance(storage_type, _StorageType) or not isinstance(numel, int) or numel < 0:
            raise pickle.UnpicklingError(f"malformed storage reference {pid!r}")
        if view_metadata is not None:
            raise RuntimeError("this legacy checkpoint uses storage views, which ember does not read; re-save it with "
                               "a current PyTorch")
        if key not in pending:
            dtype = storage_type.dtype
            if numel * dtype.itemsize > len(data):
                raise RuntimeError(f"storage {key} declares more bytes than the file holds: the checkpoint is corrupt")
            raw = np.zeros(numel * dtype.itemsize, np.uint8)
            pending[key] = (raw, _make_storage(raw, dtype, location, map_location, "little"), dtype)
        return pending[key][1]

    result = next_pickle(persistent_load)
    keys = next_pickle()
    if not isinstance(keys, list):
        raise RuntimeError("the legacy checkpoint's storage list is corrupt")
    for key in keys:
        if key not in pending:
            raise RuntimeError(f"storage key {key!r} not found in the checkpoint's object")
        raw, storage, dtype = pending[key]
        head = buf.read(8)
        if len(head) != 8:
            raise RuntimeError("the legacy checkpoint is truncated")
        numel = struct.unpack("<q" if little else ">q", head)[0]
        if numel * dtype.itemsize != raw.size:
            raise RuntimeError(f"storage {key} holds {numel} elements but {raw.size // dtype.itemsize} were declared")
        body = buf.read(raw.size)
        if len(body) != raw.size:
            raise RuntimeError("the legacy checkpoint is truncated")
        arr = np.frombuffer(body, dtype=np.uint8)
        if not little and dtype.itemsize > 1:
            arr = arr.view(dtype.np).byteswap().view(np.uint8)
        raw[:] = arr        # the storage's array is a view of ``raw``
    return result


def _no_persistent(pid):
    raise pickle.UnpicklingError("unexpected storage reference")


def _pickle_end(data: bytes, start: int) -> int:
    """The end offset of the pickle that starts at ``start`` (a static scan; nothing is executed)."""
    import pickletools
    try:
        for op, _, pos in pickletools.genops(io.BytesIO(data[start:])):
            if op.name == "STOP":
                return start + pos + 1
    except Exception as e:
        raise pickle.UnpicklingError(f"malformed pickle: {e}") from None
    raise pickle.UnpicklingError("pickle data was truncated")


def _is_path(f) -> bool:
    return isinstance(f, (str, os.PathLike))


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Load an object saved with ``ember.save`` or ``torch.save`` (see the module docstring).

    Args:
        f: a path or a binary file-like object.
        map_location: where storages go: a device, a string, a ``{saved: new}`` dict of location strings,
            or a callable ``(storage, location) -> storage``.
        weights_only: only tensors, containers, primitives and allowlisted globals (the default).
        mmap: map the file instead of reading it (zip checkpoints given by path).
    """
    true_values = ("1", "y", "yes", "true")
    weights_only_not_set = weights_only is None
    if weights_only_not_set:
        weights_only = pickle_module is None
    force = os.getenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in true_values
    force_no = os.getenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in true_values
    if force and force_no:
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` should "
                           "be set, but both were set.")
    if force:
        weights_only = True
    elif force_no and weights_only_not_set:
        warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since the`weights_only` "
                      "argument was not explicitly passed to `torch.load`, forcing weights_only=False.",
                      UserWarning, stacklevel=2)
        weights_only = False
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    if pickle_load_args and weights_only:
        warnings.warn("pickle_load_args only works if `weights_only=False`.", stacklevel=2)

    if _is_path(f) and os.fspath(f).endswith(".safetensors"):
        from ember.utils.safetensors import load_file
        device = "cpu" if map_location is None else str(ember.device(map_location))
        return load_file(f, device=device)

    with contextlib.ExitStack() as stack:
        fh = stack.enter_context(open(f, "rb")) if _is_path(f) else f
        start = fh.tell()
        is_zip = zipfile.is_zipfile(fh)
        fh.seek(start)
        try:
            if is_zip:
                if mmap and not _is_path(f):
                    raise ValueError("f must be a file path in order to use the mmap argument")
                return _load_zip(fh, os.fspath(f) if _is_path(f) else None, map_location, weights_only, mmap,
                                 pickle_module)
            if mmap:
                name = f"{f}, " if isinstance(f, str) else ""
                raise RuntimeError(f"mmap can only be used with files saved with `torch.save({name}"
                                   "_use_new_zipfile_serialization=True), please torch.save your checkpoint with this "
                                   "option in order to use mmap.")
            head = fh.read(512)
            fh.seek(start)
            if _is_tar(fh):
                if weights_only:
                    raise RuntimeError("Cannot use weights_only=True with files saved in the legacy .tar format. "
                                       + UNSAFE_MESSAGE)
                raise RuntimeError("ember does not read the legacy .tar checkpoint format; re-save the file with a "
                                   "current PyTorch")
            fh.seek(start)
            data = fh.read()
            if not data:
                raise EOFError("Ran out of input")
            if head[:2] != b"\x80\x02":
                raise pickle.UnpicklingError("invalid load key: the file is neither a zip checkpoint nor a legacy "
                                             "PyTorch pickle (is it truncated or corrupted?)")
            return _load_legacy(data, map_location, weights_only, pickle_module)
        except pickle.UnpicklingError as e:
            if weights_only:
                raise pickle.UnpicklingError(_wo_message(str(e))) from None
            raise
        except zipfile.BadZipFile as e:
            raise RuntimeError(f"PytorchStreamReader failed reading zip archive: {e} (is the file truncated or "
                               "corrupted?)") from None


def _is_tar(fh) -> bool:
    start = fh.tell()
    try:
        with tarfile.open(fileobj=fh, mode="r:"):
            return True
    except tarfile.TarError:
        return False
    finally:
        fh.seek(start)


def get_unsafe_globals_in_checkpoint(f) -> list:
    """The globals of a checkpoint's pickle that are not allowed by default (a static scan)."""
    import pickletools
    with contextlib.ExitStack() as stack:
        fh = stack.enter_context(open(f, "rb")) if _is_path(f) else f
        with _open_archive(fh) as zf:
            _, records, _ = _check_archive(zf)
            data = _read_record(zf, records["data.pkl"])
    allowed = _allowed_globals()
    out = []
    for op, arg, _ in pickletools.genops(io.BytesIO(data)):
        if op.name == "GLOBAL":
            module, name = arg.split(" ", 1)
            full = f"{_PY2_MODULES.get(module, module)}.{name}"
            if full not in allowed and full not in _user_globals and full not in out:
                out.append(full)
    return out


# ---------------------------------------------------------------------------------------------------
# save
# ---------------------------------------------------------------------------------------------------

class _Global:
    """A ``GLOBAL module name`` written as is (the pickler must not import ``torch``)."""

    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):  # only so that the pickler accepts it as a REDUCE callable
        raise TypeError("a placeholder")

    __name__ = "_Global"


class _StorageRef:
    __slots__ = ("key",)

    def __init__(self, key):
        self.key = key


class _Saver(pickle._Pickler):
    """Protocol 2, every tensor as PyTorch's ``_rebuild_tensor_v2`` over a shared storage record."""

    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file):
        super().__init__(file, protocol=DEFAULT_PROTOCOL)
        self.storages: list = []      # (root array, dtype, location) in key order
        self._keys: dict = {}
        self._refs: dict = {}

    def _save_global_placeholder(self, obj):
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("utf-8"))
        self.memoize(obj)

    dispatch[_Global] = _save_global_placeholder

    def save_global(self, obj, name=None):
        module = getattr(obj, "__module__", "") or ""
        if module == "ember" or module.startswith("ember."):  # ember's classes are PyTorch's for the reader
            qual = name or getattr(obj, "__qualname__", obj.__name__)
            torch_module = "torch" + module[len("ember"):]
            self._save_global_placeholder(_Global(torch_module, qual))
            return
        super().save_global(obj, name)

    def _save_function(self, obj):
        self.save_global(obj)

    dispatch[types.FunctionType] = _save_function

    def _save_dtype(self, obj):
        self._save_global_placeholder(_Global("torch", _dtype_name(obj)))

    dispatch[ember.dtype] = _save_dtype

    def _save_qscheme(self, obj):
        self._save_global_placeholder(_Global("torch", obj.name))

    dispatch[ember.qscheme] = _save_qscheme

    def persistent_id(self, obj):
        if type(obj) is _StorageRef:
            root, dtype, location = self.storages[obj.key]
            return ("storage", _Global("torch", _STORAGE_NAMES[_dtype_name(dtype)]), str(obj.key), location,
                    root.size)
        return None

    def _storage_of(self, t):
        """(storage key, offset, stride) of tensor ``t``, adding its storage on first sight."""
        a = t._data
        if t.device.type == "meta":
            raise RuntimeError("cannot save a meta tensor: it has no data")
        root = base = root_array(a)
        if a.dtype.names is not None and base.dtype.itemsize == a.dtype.itemsize:
            root = base.view(t.dtype.np)     # a quantized tensor over its integers (Note [Quantized dtypes])
        shareable = (root.dtype == a.dtype and (root.flags.c_contiguous or root.flags.f_contiguous)
                     and all(s >= 0 for s in a.strides))
        if not shareable:  # an unusual layout: save this tensor's own contiguous copy
            root = np.ascontiguousarray(a.get() if hasattr(a, "get") else a).reshape(-1)
            key = len(self.storages)
            self.storages.append((root, t.dtype, _location(t)))
            self._refs[id(root)] = root
            return key, 0, contiguous_strides(a.shape)
        item = a.itemsize
        offset = 0 if a.size == 0 else (array_data_ptr(a) - array_data_ptr(root)) // item
        start = 0
        slot = arena.slot_of(root, offset)
        if slot is not None:   # a tensor living in an arena (Note [Arenas]): its own slot only
            start, stop = slot
            root = root[start:stop]
        ident = (id(base), start, _dtype_name(t.dtype))
        key = self._keys.get(ident)
        if key is None:
            key = self._keys[ident] = len(self.storages)
            self.storages.append((root, t.dtype, _location(t)))
            self._refs[id(root)] = root     # keep it alive (ids stay unique)
        return key, offset - start, tuple(s // item for s in a.strides)

    def reducer_override(self, obj):
        from ember.nn.parameter import Parameter
        if isinstance(obj, ember.Tensor):
            if isinstance(obj, Parameter):
                plain = obj.detach()
                return (_Global("torch._utils", "_rebuild_parameter"),
                        (plain, obj.requires_grad, OrderedDict()))
            if obj.layout is not ember.strided:     # PyTorch's form: the layout and the parts, each a tensor
                return (_Global("torch._utils", "_rebuild_sparse_tensor"), (obj.layout, _sparse_parts(obj)))
            key, offset, stride = self._storage_of(obj)
            if obj.is_quantized:
                return (_Global("torch._utils", "_rebuild_qtensor"),
                        (_StorageRef(key), offset, tuple(obj.shape), stride, _quantizer_params(obj), False,
                         OrderedDict()))
            args = (_StorageRef(key), offset, tuple(obj.shape), stride, obj.requires_grad, OrderedDict())
            # a lazy conjugate / negation keeps its memory and its bit (PyTorch's get_tensor_metadata)
            metadata = {k: True for k, on in (("conj", obj.is_conj()), ("neg", obj.is_neg())) if on}
            return (_Global("torch._utils", "_rebuild_tensor_v2"), args + ((metadata,) if metadata else ()))
        if isinstance(obj, ember.Size):
            return (_Global("torch", "Size"), (tuple(obj),))
        if isinstance(obj, ember.layout):
            return (_Global("torch.serialization", "_get_layout"), (f"torch.{obj.name}",))
        if isinstance(obj, ember.device):
            return (_Global("torch", "device"), (obj.type,) if obj.index is None else (obj.type, obj.index))
        return NotImplemented


def _quantizer_params(t) -> tuple:
    """A quantized tensor's parameters as PyTorch pickles them (``torch/_tensor.py``'s ``_reduce_ex_internal``)."""
    q = t.qscheme()
    if q is ember.per_tensor_affine:
        return (q, t.q_scale(), t.q_zero_point())
    return (q, t.q_per_channel_scales(), t.q_per_channel_zero_points(), t.q_per_channel_axis())


def _location(t) -> str:
    d = t.device
    return "cpu" if d.type == "cpu" else f"{d.type}:{d.index or 0}"


def _storage_bytes(root) -> np.ndarray:
    if hasattr(root, "get"):  # CuPy
        root = root.get()
    flat = root.reshape(-1, order="A")
    return np.ascontiguousarray(flat).view(np.uint8)


def _write_zip(fh, archive: str, pickled: bytes, storages) -> None:
    import secrets

    def aligned(zf, name, data):
        info = zipfile.ZipInfo(f"{archive}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_STORED
        offset = fh.tell() + 30 + len(info.filename.encode("utf-8"))
        pad = (-(offset + 4)) % _ALIGNMENT
        info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
        zf.writestr(info, data)

    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        aligned(zf, "data.pkl", pickled)
        aligned(zf, ".format_version", b"1")
        aligned(zf, ".storage_alignment", str(_ALIGNMENT).encode())
        aligned(zf, "byteorder", sys.byteorder.encode())
        for key, (root, _dtype, _loc) in enumerate(storages):
            aligned(zf, f"data/{key}", _storage_bytes(root).tobytes() if root.size else b"")
        aligned(zf, "version", b"3\n")
        aligned(zf, ".data/serialization_id", str(secrets.randbits(128)).zfill(40)[:40].encode())


def save(obj, f, pickle_module=pickle, pickle_protocol=DEFAULT_PROTOCOL, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False) -> None:
    """Save ``obj`` in PyTorch's zip checkpoint format (``torch.load`` reads it, also with
    ``weights_only=True``).  A path is written atomically: a temporary file in the same folder is
    flushed, fsynced and renamed over the target."""
    if not _use_new_zipfile_serialization:
        raise RuntimeError("ember writes only the zip checkpoint format (_use_new_zipfile_serialization=True)")
    if pickle_protocol != DEFAULT_PROTOCOL:
        warnings.warn(f"ember writes pickle protocol {DEFAULT_PROTOCOL} (what weights_only loading accepts); "
                      f"pickle_protocol={pickle_protocol} is ignored", stacklevel=2)
    buf = io.BytesIO()
    saver = _Saver(buf)
    saver.dump(obj)
    if _is_path(f):
        path = os.fspath(f)
        archive = os.path.splitext(os.path.basename(path))[0] or "archive"
        _atomic_write(path, lambda fh: _write_zip(fh, archive, buf.getvalue(), saver.storages))
    else:
        _write_zip(f, "archive", buf.getvalue(), saver.storages)


def _atomic_write(path: str, write) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            mode = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
