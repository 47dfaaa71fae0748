"""``DistributedDataParallel`` (``torch/nn/parallel/distributed.py`` and c10d's Reducer).

Note [Gradient buckets]
~~~~~~~~~~~~~~~~~~~~~~~
At construction the module's parameters and buffers are broadcast from rank 0, so every replica starts
equal, and the parameters that require grad are laid into buckets: in reverse registration order (roughly
the order backward produces their gradients), one dtype per bucket, the first bucket capped at 1 MiB and
the others at ``bucket_cap_mb`` (25 MiB), as PyTorch lays them. Each bucket owns one flat buffer.

During backward a post-accumulate-grad hook on each parameter marks it ready. When every parameter of a
bucket is ready, and every earlier bucket has been launched (so all ranks issue their collectives in the
same order), its gradients are copied into the buffer and the communication hook runs on it -- by default
``allreduce_hook``: divide by the world size, ``all_reduce`` asynchronously -- while backward goes on
computing the remaining gradients. Later hooks test the pending reductions, which is what moves MPI's
nonblocking operations along. A callback queued on the autograd engine runs when backward ends: it waits
for every bucket and writes the averaged gradients back (or makes ``.grad`` a view of the bucket with
``gradient_as_bucket_view``).

With ``find_unused_parameters`` the parameters that the forward's outputs do not reach are ready at once
(they contribute zeros), and the ranks agree which parameters no rank used: those keep their ``.grad``.
Without it, a parameter that never gets a gradient leaves its bucket unlaunched, and the next forward
raises PyTorch's "Expected to have finished reduction in the prior iteration" error naming the parameters.
Inside ``no_sync()`` gradients accumulate locally; the first backward after it reduces the sum.
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Any, Callable, Iterator

import ember
import ember.distributed as dist
from ember.distributed.distributed_c10d import GradBucket
from ember.nn.modules.module import Module

__all__ = ["DistributedDataParallel"]

_FIRST_BUCKET_BYTES = dist._DEFAULT_FIRST_BUCKET_BYTES
_BUCKET_MB = 25


class _Bucket:
    __slots__ = ("index", "params", "offsets", "buffer", "pending", "future")

    def __init__(self, index: int, params: list[Any]) -> None:
        self.index = index
        self.params = params
        self.offsets = []
        n = 0
        for p in params:
            self.offsets.append(n)
            n += p.numel()
        self.buffer = ember.zeros(n, dtype=params[0].dtype, device=params[0].device)
        self.pending = len(params)
        self.future: Any = None


def _buckets(params: list[Any], cap_bytes: int, first_cap: int) -> list[list[Any]]:
    """Parameters in reverse order, cut into buckets by size and dtype (Note [Gradient buckets])."""
    out: list[list[Any]] = []
    open_by_dtype: dict[Any, tuple[list[Any], int]] = {}
    for p in reversed(params):
        cap = first_cap if not out else cap_bytes
        cur, size = open_by_dtype.get(p.dtype, ([], 0))
        cur.append(p)
        size += p.numel() * p.element_size()
        if size >= cap:
            out.append(cur)
            open_by_dtype.pop(p.dtype, None)
        else:
            open_by_dtype[p.dtype] = (cur, size)
    out.extend(cur for cur, _ in open_by_dtype.values() if cur)
    return out


def _default_hook(state: Any, bucket: GradBucket) -> Any:
    from ember.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
    return allreduce_hook(state, bucket)


class DistributedDataParallel(Module):
    """Data parallelism over the ranks of a process group (Note [Gradient buckets])."""

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0,
                 broadcast_buffers: bool | None = None, init_sync: bool = True, process_group: Any = None,
                 bucket_cap_mb: float | None = None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 delay_all_reduce_named_params: Any = None, param_to_hook_all_reduce: Any = None,
                 mixed_precision: Any = None, device_mesh: Any = None, skip_all_reduce_unused_params: bool = False,
                 bucket_cap_mb_list: list[int] | None = None, batched_grad_copy: bool = False,
                 forward_sync_buffers: bool | None = None) -> None:
        super().__init__()
        if bucket_cap_mb_list is not None:
            raise NotImplementedError("DistributedDataParallel: bucket_cap_mb_list is not supported by ember yet")
        # PyTorch 2.13: ``broadcast_buffers`` gives way to ``forward_sync_buffers``, which never turns off the
        # buffers' broadcast at construction (``broadcast_buffers=False`` still does)
        if broadcast_buffers is not None:
            warnings.warn("Both `broadcast_buffers` and `forward_sync_buffers` were specified. `broadcast_buffers` "
                          "is deprecated and its value is ignored when `forward_sync_buffers` is provided."
                          if forward_sync_buffers is not None else
                          "`broadcast_buffers` is deprecated. Use `forward_sync_buffers` instead. IMPORTANT: unlike "
                          "`broadcast_buffers=False`, `forward_sync_buffers=False` still syncs buffers at init. If "
                          "you rely on buffers NOT being synced at init (e.g. rank-local buffers), keep using "
                          "`broadcast_buffers=False` until `init_sync_buffers` is available.", FutureWarning,
                          stacklevel=2)
        if forward_sync_buffers is not None:
            init_sync_buffers = True
        else:
            forward_sync_buffers = init_sync_buffers = broadcast_buffers if broadcast_buffers is not None else True
        if bool(delay_all_reduce_named_params is not None) != bool(param_to_hook_all_reduce is not None):
            raise ValueError("delay_all_reduce_named_params and param_to_hook_all_reduce need to be set at the "
                             "same time.")
        if delay_all_reduce_named_params is not None or mixed_precision is not None or device_mesh is not None:
            raise NotImplementedError("DistributedDataParallel: delay_all_reduce_named_params, mixed_precision and "
                                      "device_mesh are not supported by ember yet")
        self.process_group = process_group if process_group is not None else \
            dist.distributed_c10d._get_default_group()
        self.module = module
        params = [p for p in module.parameters()]
        if not any(p.requires_grad for p in params):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter that "
                               "requires a gradient.")
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        types = {p.device.type for p in params}
        if len(types) != 1:
            raise ValueError(f"DistributedDataParallel's input module must be on the same type of devices, but input "
                             f"module parameters locate in {types}.")
        self.device_type = next(iter(types))
        if (device_ids or output_device) and self.device_type == "cpu":
            raise ValueError("DistributedDataParallel device_ids and output_device arguments only work with "
                             "single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                             f"{device_ids}, output_device {output_device}, and module parameters "
                             f"{ {p.device for p in params} }.")
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        self.forward_sync_buffers = forward_sync_buffers
        self.batched_grad_copy = batched_grad_copy
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.bucket_bytes_cap = int((bucket_cap_mb if bucket_cap_mb is not None else _BUCKET_MB) * 1024 * 1024)
        self._params = [p for p in params if p.requires_grad]
        self._index_of = {id(p): i for i, p in enumerate(self._params)}
        self._names = {id(p): n for n, p in module.named_parameters() if p.requires_grad}
        self._verify_params_across_ranks()
        if init_sync:
            self._sync_states([*params, *module.buffers()] if init_sync_buffers else params)
        first = _FIRST_BUCKET_BYTES if bucket_cap_mb is None else self.bucket_bytes_cap
        self._buckets = [_Bucket(i, ps) for i, ps in enumerate(_buckets(self._params, self.bucket_bytes_cap, first))]
        self._bucket_of = {id(p): (b, k) for b in self._buckets for k, p in enumerate(b.params)}
        self._hook: Callable[[Any, GradBucket], Any] = _default_hook
        self._hook_state: Any = self.process_group
        self._hook_registered = False
        self._active = False  # a synced backward is under way
        self._ready: set[int] = set()
        self._used: set[int] = set()
        self._callback_queued = False
        self._next_launch = 0
        self._unfinished: list[int] | None = None
        self._handles = [p.register_post_accumulate_grad_hook(self._grad_ready) for p in self._params]

    @property
    def broadcast_buffers(self) -> bool:
        return self.forward_sync_buffers

    @broadcast_buffers.setter
    def broadcast_buffers(self, value: bool) -> None:
        self.forward_sync_buffers = value

    # -- construction --------------------------------------------------------------------------------------
    def _verify_params_across_ranks(self) -> None:
        shapes = [(tuple(p.shape), str(p.dtype)) for p in self._params]
        everyone: list[Any] = [None] * self.process_group.size()
        dist.all_gather_object(everyone, shapes, group=self.process_group)
        me = self.process_group.rank()
        for r, theirs in enumerate(everyone):
            if len(theirs) != len(shapes):
                raise RuntimeError(f"DDP expects same model across all ranks, but Rank {me} has {len(shapes)} params, "
                                   f"while rank {r} has inconsistent {len(theirs)} params.")
            for i, (a, b) in enumerate(zip(shapes, theirs)):
                if a != b:
                    raise RuntimeError(f"DDP expects same model across all ranks, but Rank {me} has a parameter "
                                       f"{i} of shape {list(a[0])} ({a[1]}), while rank {r} has {list(b[0])} ({b[1]})"
                                       ".")

    def _sync_states(self, tensors: list[Any]) -> None:
        """Broadcast ``tensors`` from rank 0 of the group, grouped by dtype into one flat message each."""
        with ember.no_grad():
            by_dtype: dict[Any, list[Any]] = {}
            for t in tensors:
                by_dtype.setdefault(t.dtype, []).append(t)
            src = dist.get_global_rank(self.process_group, 0)
            for ts in by_dtype.values():
                flat = ember.cat([t.detach().reshape(-1) for t in ts])
                dist.broadcast(flat, src=src, group=self.process_group)
                if self.process_group.rank() != 0:
                    o = 0
                    for t in ts:
                        n = t.numel()
                        t.detach().copy_(flat[o:o + n].view(t.shape))
                        o += n

    # -- forward -------------------------------------------------------------------------------------------
    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        sync = ember.is_grad_enabled() and self.require_backward_grad_sync
        if sync and self._unfinished is not None:
            self._raise_unfinished()
        # Buffers come from rank 0 before a forward when the previous forward was a synced one (PyTorch's
        # ``require_forward_param_sync``): the first forward under no_grad or no_sync still broadcasts, the ones
        # after it do not, and neither does the first synced forward after them.
        if self.forward_sync_buffers and self.require_forward_param_sync:
            bufs = list(self.module.buffers())
            if bufs:
                self._sync_states(bufs)
        out = self.module(*inputs, **kwargs)
        self.require_forward_param_sync = sync
        if sync:
            self._prepare_for_backward(out)
        else:
            self._active = False
        return out

    def _prepare_for_backward(self, out: Any) -> None:
        self._active = True
        self._ready = set()
        self._used = set()
        self._next_launch = 0
        self._callback_queued = False
        for b in self._buckets:
            b.pending = len(b.params)
            b.future = None
        if self.find_unused_parameters or self.static_graph:
            reached = _leaves_reached(out)
            for p in self._params:
                if id(p) not in reached:
                    self._mark_ready(p, used=False)

    def _raise_unfinished(self) -> None:
        missing = self._unfinished or []
        self._unfinished = None
        names = ", ".join(self._names.get(id(self._params[i]), "?") for i in missing)
        raise RuntimeError(
            "Expected to have finished reduction in the prior iteration before starting a new one. This error "
            "indicates that your module has parameters that were not used in producing loss. You can enable unused "
            "parameter detection by passing the keyword argument `find_unused_parameters=True` to "
            "`torch.nn.parallel.DistributedDataParallel`, and by \nmaking sure all `forward` function outputs "
            "participate in calculating loss. \nIf you already have done the above, then the distributed data "
            "parallel module wasn't able to locate the output tensors in the return value of your module's "
            "`forward` function. Please include the loss function and the structure of the return value of "
            "`forward` of your module when reporting this issue (e.g. list, dict, iterable).\nParameter indices "
            f"which did not receive grad for rank {dist.get_rank()}: {' '.join(map(str, missing))}\n"
            f"Parameters which did not receive grad for rank {dist.get_rank()}: {names}")

    # -- backward ------------------------------------------------------------------------------------------
    def _grad_ready(self, p: Any) -> None:
        if not self._active:
            return
        if not self._callback_queued:
            self._callback_queued = True
            ember.autograd.Variable._execution_engine.queue_callback(self._finalize)
        self._mark_ready(p, used=True)
        for b in self._buckets[:self._next_launch]:  # move the launched reductions along
            if b.future is not None and b.future._work is not None:
                b.future._work.is_completed()

    def _mark_ready(self, p: Any, used: bool) -> None:
        if id(p) in self._ready:
            return
        self._ready.add(id(p))
        if used:
            self._used.add(self._index_of[id(p)])
        bucket, _ = self._bucket_of[id(p)]
        bucket.pending -= 1
        while self._next_launch < len(self._buckets) and self._buckets[self._next_launch].pending == 0:
            self._launch(self._buckets[self._next_launch])
            self._next_launch += 1

    def _launch(self, b: _Bucket) -> None:
        with ember.no_grad():
            for p, o in zip(b.params, b.offsets):
                view = b.buffer[o:o + p.numel()]
                g = p.grad
                if g is None:
                    view.zero_()
                elif not (g.data_ptr() == view.data_ptr() and g.is_contiguous()):
                    view.copy_(g.reshape(-1))
            bucket = GradBucket(b.index, b.buffer, b.params, b.offsets, b.index == len(self._buckets) - 1)
            b.future = self._hook(self._hook_state, bucket)

    def _finalize(self) -> None:
        self._active = False
        if self._next_launch < len(self._buckets):
            self._unfinished = [self._index_of[id(p)] for p in self._params if id(p) not in self._ready]
            return
        unused_everywhere: set[int] = set()
        if self.find_unused_parameters or self.static_graph:
            used = ember.zeros(len(self._params), dtype=ember.int32)
            if self._used:
                used[list(self._used)] = 1
            dist.all_reduce(used, op=dist.ReduceOp.MAX, group=self.process_group)
            unused_everywhere = {i for i, u in enumerate(used.tolist()) if not u}
        with ember.no_grad():
            for b in self._buckets:
                result = b.future.wait()
                if isinstance(result, (list, tuple)):
                    result = result[0]
                if result is not b.buffer:
                    b.buffer.copy_(result.reshape(-1))
                for p, o in zip(b.params, b.offsets):
                    if self._index_of[id(p)] in unused_everywhere:
                        continue
                    view = b.buffer[o:o + p.numel()].view(p.shape)
                    if self.gradient_as_bucket_view:
                        p.grad = view
                    elif p.grad is None:
                        p.grad = view.clone()
                    else:
                        p.grad.copy_(view)

    # -- the rest of PyTorch's API -----------------------------------------------------------------------------
    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside, backward accumulates gradients locally; the first synced backward after it reduces them."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def register_comm_hook(self, state: Any, hook: Callable[[Any, GradBucket], Any]) -> None:
        """Reduce each bucket with ``hook(state, bucket)``, which returns a Future of the bucket's result."""
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        if self._hook_registered:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        self._hook_registered = True
        self._hook, self._hook_state = hook, state

    def _set_static_graph(self) -> None:
        self.static_graph = True

    def join(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("DistributedDataParallel.join() (uneven inputs) is not supported by ember yet")


def _leaves_reached(out: Any) -> set[int]:
    """The ids of the leaf tensors the autograd graph behind ``out``'s tensors reaches."""
    from ember.utils._pytree import tree_leaves
    reached: set[int] = set()
    seen: set[int] = set()
    stack = [t.grad_fn for t in tree_leaves(out) if isinstance(t, ember.Tensor) and t.grad_fn is not None]
    for t in tree_leaves(out):
        if isinstance(t, ember.Tensor) and t.requires_grad and t.grad_fn is None:
            reached.add(id(t))
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        var = getattr(n, "variable", None)
        if var is not None:
            reached.add(id(var))
        for nxt, _ in getattr(n, "next_functions", ()):
            if nxt is not None:
                stack.append(nxt)
    return reached
