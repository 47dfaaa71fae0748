"""The built-in DDP communication hooks: plain averaging, and averaging in float16 / bfloat16 (half the bytes
on the wire; the result is written back into the bucket in its own dtype)."""
from __future__ import annotations

from typing import Any

import ember
import ember.distributed as dist

__all__ = ["allreduce_hook", "bf16_compress_hook", "fp16_compress_hook"]


def _group(process_group: Any) -> Any:
    return process_group if process_group is not None else dist.group.WORLD


def allreduce_hook(process_group: Any, bucket: Any) -> Any:
    """Average the bucket over the group: divide by the group size, then sum (DDP's default)."""
    group = _group(process_group)
    buf = bucket.buffer()
    buf.div_(group.size())
    work: Any = dist.all_reduce(buf, group=group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def _compress_hook(dtype: Any, process_group: Any, bucket: Any) -> Any:
    group = _group(process_group)
    buf = bucket.buffer()
    compressed = buf.to(dtype).div_(group.size())

    def decompress(fut: Any) -> Any:
        buf.copy_(fut.value()[0])
        return buf
    work: Any = dist.all_reduce(compressed, group=group, async_op=True)
    return work.get_future().then(decompress)


def fp16_compress_hook(process_group: Any, bucket: Any) -> Any:
    """Average the bucket in float16."""
    return _compress_hook(ember.float16, process_group, bucket)


def bf16_compress_hook(process_group: Any, bucket: Any) -> Any:
    """Average the bucket in bfloat16."""
    return _compress_hook(ember.bfloat16, process_group, bucket)
