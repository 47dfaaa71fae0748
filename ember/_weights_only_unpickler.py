"""The weights-only unpickler (mirrors ``torch/_weights_only_unpickler.py``): an interpreter of the
protocol-2 pickle opcodes that never imports anything. A global must be on PyTorch's allowlist (tensor
rebuild functions, dtypes, storages, ``OrderedDict``, ``Counter``, ``Size``, ``device``, ``Parameter``,
``set`` / ``complex`` / ``bytearray``, ``_codecs.encode``) or added with ``add_safe_globals`` /
``safe_globals``; ``sys``, ``os``, ``posix`` and ``nt`` are refused always."""
from __future__ import annotations

import contextlib
import functools
import io
import pickle
import struct
from collections import Counter, OrderedDict

import ember
from ember.c10.qscheme import ALL_QSCHEMES
from ember._utils import (_STORAGE_DTYPES, _STORAGE_NAMES, _StorageType, _get_layout, _rebuild_from_type_v2,
                          _rebuild_parameter, _rebuild_parameter_with_state, _rebuild_qtensor, _rebuild_sparse_tensor,
                          _rebuild_tensor, _rebuild_tensor_v2, _rebuild_tensor_v3)

_BLOCKED_MODULES = ("sys", "os", "posix", "nt")
_PY2_MODULES = {"__builtin__": "builtins", "copy_reg": "copyreg"}   # names protocol-2 writers use


def _codecs_encode(obj, encoding="utf-8", errors="strict"):
    import codecs
    if not isinstance(obj, str):
        raise pickle.UnpicklingError("_codecs.encode expects a str")
    return codecs.encode(obj, encoding, errors)


def _size(*args):
    return ember.Size(*args)


def _device(*args):
    return ember.device(*args)


@functools.lru_cache(maxsize=None)
def _allowed_globals() -> dict:
    """PyTorch's allowlist, mapped to ember's objects (built once; do not mutate)."""
    from ember.nn.parameter import Parameter
    allowed = {
        "collections.OrderedDict": OrderedDict, "collections.Counter": Counter,
        "torch.nn.parameter.Parameter": Parameter, "torch.Size": _size, "torch.Tensor": ember.Tensor,
        "torch.device": _device, "_codecs.encode": _codecs_encode, "builtins.bytearray": bytearray,
        "builtins.set": set, "builtins.complex": complex,
        "torch._utils._rebuild_tensor": _rebuild_tensor, "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
        "torch._utils._rebuild_tensor_v3": _rebuild_tensor_v3, "torch._utils._rebuild_parameter": _rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2, "torch._utils._rebuild_qtensor": _rebuild_qtensor,
        "torch.storage.UntypedStorage": _StorageType("UntypedStorage"),
        "torch._utils._rebuild_sparse_tensor": _rebuild_sparse_tensor, "torch.serialization._get_layout": _get_layout,
    }
    for name in _STORAGE_DTYPES:
        allowed[f"torch.{name}"] = _StorageType(name)
    for name in _STORAGE_NAMES:
        allowed[f"torch.{name}"] = getattr(ember, name)
    for q in ALL_QSCHEMES:       # quantization schemes (quantized tensors' parameters)
        allowed[f"torch.{q.name}"] = q
    for alias, name in (("float", "float32"), ("double", "float64"), ("half", "float16"), ("long", "int64"),
                        ("int", "int32"), ("short", "int16"), ("cfloat", "complex64"), ("cdouble", "complex128")):
        allowed[f"torch.{alias}"] = getattr(ember, name)
    return allowed


_user_globals: dict = {}


def _global_name(obj) -> str:
    return f"{obj.__module__}.{obj.__qualname__}"


def add_safe_globals(safe_globals) -> None:
    """Allow these classes / functions (or ``(obj, "module.name")`` pairs) in ``weights_only`` loads."""
    for g in safe_globals:
        if isinstance(g, tuple):
            obj, name = g
            _user_globals[name] = obj
        else:
            name = _global_name(g)
            _user_globals[name] = g
            if name.startswith("ember."):  # files name ember's classes by their PyTorch path
                _user_globals["torch." + name[len("ember."):]] = g


def get_safe_globals() -> list:
    return list(_user_globals.values())


def clear_safe_globals() -> None:
    _user_globals.clear()


@contextlib.contextmanager
def safe_globals(safe_globals):
    """A context manager allowing ``safe_globals`` for the loads inside it."""
    saved = dict(_user_globals)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        _user_globals.clear()
        _user_globals.update(saved)


class _WeightsUnpickler:
    """Runs a pickle with only containers, primitives and allowlisted globals (see the module docstring)."""

    def __init__(self, data: bytes, persistent_load):
        self.buf = io.BytesIO(data)
        self.size = len(data)
        self.persistent_load = persistent_load
        self.allowed = _allowed_globals()
        self.callables = {id(v) for v in self.allowed.values()} | {id(v) for v in _user_globals.values()}

    def read(self, n):
        b = self.buf.read(n)
        if len(b) != n:
            raise pickle.UnpicklingError("pickle data was truncated")
        return b

    def readline(self):
        line = self.buf.readline()
        if not line.endswith(b"\n"):
            raise pickle.UnpicklingError("pickle data was truncated")
        return line[:-1]

    def _lookup(self, module, name):
        module = _PY2_MODULES.get(module, module)
        full = f"{module}.{name}"
        if module in _BLOCKED_MODULES or module.split(".")[0] in _BLOCKED_MODULES:
            raise pickle.UnpicklingError(f"Trying to load unsupported GLOBAL {full} whose module {module} is blocked.")
        if full in self.allowed:
            return self.allowed[full]
        if full in _user_globals:
            return _user_globals[full]
        raise pickle.UnpicklingError(
            f"Unsupported global: GLOBAL {full} was not an allowed global by default. Please use "
            f"`ember.serialization.add_safe_globals([{name}])` or the `ember.serialization.safe_globals([{name}])` "
            "context manager to allowlist this global if you trust this class/function.")

    def _callable_ok(self, func) -> bool:
        return id(func) in self.callables

    def load(self):
        try:
            return self._load()
        except pickle.UnpicklingError:
            raise
        except (IndexError, KeyError, struct.error, UnicodeDecodeError, TypeError, ValueError, OverflowError,
                AttributeError, MemoryError, RecursionError) as e:
            raise pickle.UnpicklingError(f"malformed pickle: {type(e).__name__}: {e}") from None

    def _load(self):
        from ember.nn.parameter import Parameter
        stack, metastack, memo = [], [], {}
        read, readline = self.read, self.readline

        def pop_mark():
            nonlocal stack
            items = stack
            stack = metastack.pop()
            return items

        while True:
            op = self.buf.read(1)
            if not op:
                raise pickle.UnpicklingError("pickle data was truncated")
            code = op[0]
            if op == pickle.PROTO:
                proto = read(1)[0]
                if proto > 3:
                    raise pickle.UnpicklingError(f"Unsupported pickle protocol {proto} (checkpoints use protocol 2)")
            elif op == pickle.STOP:
                if metastack or len(stack) != 1:
                    raise pickle.UnpicklingError("pickle ended with objects left on its stack: the data is corrupt")
                return stack.pop()
            elif op == pickle.GLOBAL:
                module = readline().decode("utf-8")
                name = readline().decode("utf-8")
                stack.append(self._lookup(module, name))
            elif op == pickle.NEWOBJ:
                args = stack.pop()
                cls = stack.pop()
                if not isinstance(args, tuple):
                    raise pickle.UnpicklingError("NEWOBJ expects a tuple of arguments")
                if cls is Parameter:
                    stack.append(Parameter(*args) if args else Parameter(ember.empty(0)))
                elif isinstance(cls, type) and any(cls is v for v in _user_globals.values()):
                    stack.append(cls.__new__(cls, *args))
                else:
                    raise pickle.UnpicklingError("Can only create new object for nn.Parameter or classes allowlisted "
                                                 f"via `add_safe_globals` but got {cls}")
            elif op == pickle.REDUCE:
                args = stack.pop()
                func = stack[-1]
                if not isinstance(args, tuple):
                    raise pickle.UnpicklingError("REDUCE expects a tuple of arguments")
                if isinstance(func, _StorageType) or not self._callable_ok(func):
                    raise pickle.UnpicklingError(f"Trying to call reduce for unrecognized function {func}")
                stack[-1] = func(*args)
            elif op == pickle.BUILD:
                state = stack.pop()
                inst = stack[-1]
                if isinstance(inst, ember.Tensor) or type(inst) is OrderedDict or \
                        any(type(inst) is v for v in _user_globals.values()):
                    if isinstance(inst, ember.Tensor) and not isinstance(state, (dict, tuple)):
                        raise pickle.UnpicklingError("unsupported Tensor state in BUILD")
                    slotstate = None
                    if isinstance(state, tuple) and len(state) == 2:
                        state, slotstate = state
                    if state:
                        if not isinstance(state, dict):
                            raise pickle.UnpicklingError("BUILD state must be a dict")
                        if hasattr(inst, "__setstate__") and any(type(inst) is v for v in _user_globals.values()):
                            inst.__setstate__(state)
                        else:
                            inst.__dict__.update(state)
                    if slotstate:
                        for k, v in slotstate.items():
                            setattr(inst, k, v)
                else:
                    raise pickle.UnpicklingError("Can only build Tensor, Parameter, OrderedDict or types allowlisted "
                                                 f"via `add_safe_globals`, but got {type(inst)}")
            elif op == pickle.APPEND:
                item = stack.pop()
                if type(stack[-1]) is not list:
                    raise pickle.UnpicklingError(f"Can only append to lists, but got {type(stack[-1])}")
                stack[-1].append(item)
            elif op == pickle.APPENDS:
                items = pop_mark()
                if type(stack[-1]) is not list:
                    raise pickle.UnpicklingError(f"Can only extend lists, but got {type(stack[-1])}")
                stack[-1].extend(items)
            elif op in (pickle.SETITEM, pickle.SETITEMS):
                if op == pickle.SETITEM:
                    value = stack.pop()
                    key = stack.pop()
                    pairs = [key, value]
                else:
                    pairs = pop_mark()
                target = stack[-1]
                if type(target) not in (dict, OrderedDict, Counter):
                    raise pickle.UnpicklingError("Can only SETITEM for dict, collections.OrderedDict, "
                                                 f"collections.Counter, but got {type(target)}")
                if len(pairs) % 2:
                    raise pickle.UnpicklingError("SETITEMS with an odd number of items")
                for i in range(0, len(pairs), 2):
                    target[pairs[i]] = pairs[i + 1]
            elif op == pickle.MARK:
                metastack.append(stack)
                stack = []
            elif op == pickle.TUPLE:
                items = tuple(pop_mark())   # (pop_mark rebinds ``stack``: take the items first)
                stack.append(items)
            elif op == pickle.TUPLE1:
                stack[-1] = (stack[-1],)
            elif op == pickle.TUPLE2:
                b, a = stack.pop(), stack.pop()
                stack.append((a, b))
            elif op == pickle.TUPLE3:
                c, b, a = stack.pop(), stack.pop(), stack.pop()
                stack.append((a, b, c))
            elif op == pickle.EMPTY_TUPLE:
                stack.append(())
            elif op == pickle.EMPTY_LIST:
                stack.append([])
            elif op == pickle.EMPTY_DICT:
                stack.append({})
            elif op == pickle.EMPTY_SET:
                stack.append(set())
            elif op == pickle.NONE:
                stack.append(None)
            elif op == pickle.NEWTRUE:
                stack.append(True)
            elif op == pickle.NEWFALSE:
                stack.append(False)
            elif op == pickle.BININT:
                stack.append(struct.unpack("<i", read(4))[0])
            elif op == pickle.BININT1:
                stack.append(read(1)[0])
            elif op == pickle.BININT2:
                stack.append(struct.unpack("<H", read(2))[0])
            elif op == pickle.LONG1:
                n = read(1)[0]
                stack.append(int.from_bytes(read(n), "little", signed=True))
            elif op == pickle.BINFLOAT:
                stack.append(struct.unpack(">d", read(8))[0])
            elif op == pickle.BINUNICODE:
                n = struct.unpack("<I", read(4))[0]
                if n > self.size:
                    raise pickle.UnpicklingError("String is too long")
                stack.append(read(n).decode("utf-8", "surrogatepass"))
            elif op == pickle.SHORT_BINSTRING:
                n = read(1)[0]
                stack.append(read(n).decode("latin1"))
            elif op == pickle.BINPERSID:
                pid = stack.pop()
                if type(pid) is tuple and len(pid) > 0 and _ascii(pid[0]) != "storage":
                    raise pickle.UnpicklingError(f"Only persistent_load of storage is allowed, but got {pid[0]!r}")
                if type(pid) not in (tuple, int):
                    raise pickle.UnpicklingError(f"persistent_load id must be tuple or int, but got {type(pid)}")
                stack.append(self.persistent_load(pid))
            elif op in (pickle.BINGET, pickle.LONG_BINGET):
                idx = read(1)[0] if op == pickle.BINGET else struct.unpack("<I", read(4))[0]
                if idx not in memo:
                    raise pickle.UnpicklingError(f"Memo value not found at index {idx}")
                stack.append(memo[idx])
            elif op in (pickle.BINPUT, pickle.LONG_BINPUT):
                idx = read(1)[0] if op == pickle.BINPUT else struct.unpack("<I", read(4))[0]
                memo[idx] = stack[-1]
            else:
                raise pickle.UnpicklingError(f"Unsupported operand {code}")


def _ascii(v):
    return v.decode("ascii") if isinstance(v, bytes) else v
