"""``AdaptiveLogSoftmaxWithLoss`` (``torch/nn/modules/adaptive.py``; Grave et al., "Efficient softmax
approximation for GPUs"): a softmax over many classes split by frequency. The head scores the ``cutoffs[0]``
most frequent classes and one entry per tail cluster; cluster ``i`` scores its classes through a low-rank
projection (``in_features / div_value**(i+1)`` wide). ``log p(c) = head(c)`` for a frequent class,
``head(cluster) + tail_i(c)`` otherwise."""
from __future__ import annotations

from collections import namedtuple
from typing import Any

from ember.nn import functional as F
from ember.nn.modules.container import ModuleList, Sequential
from ember.nn.modules.linear import Linear
from ember.nn.modules.module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    def __init__(self, in_features: int, n_classes: int, cutoffs: Any, div_value: float = 4.0,
                 head_bias: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1 or \
                len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        kw = {"device": device, "dtype": dtype}
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            width = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, width, bias=False, **kw),
                                        Linear(width, size, bias=False, **kw)))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for proj, out in self.tail:
            proj.reset_parameters()
            out.reset_parameters()

    def forward(self, input_: Any, target_: Any) -> Any:
        """``(output, loss)``: each row's log-probability of its target, and their negated mean."""
        if target_.dim() == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.dim() != 2:
                raise RuntimeError("1D target tensor expects 2D input tensors, but found inputs with size",
                                   input_.size())
        elif target_.dim() == 0:
            if input_.dim() != 1:
                raise RuntimeError("0D target tensor expects 1D input tensors, but found inputs with size",
                                   input_.size())
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.dim() > 0
        x = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        n = target.size(0)
        output = x.new_zeros(n)
        head_index = target.clone()  # the head's entry of each row: its class, or its cluster
        covered = 0
        for i, (lo, hi) in enumerate(zip([0] + self.cutoffs[:-1], self.cutoffs)):
            rows = ((target >= lo) & (target < hi)).nonzero().flatten()
            if rows.numel() == 0:
                continue
            covered += rows.numel()
            if i > 0:
                logp = F.log_softmax(self.tail[i - 1](x.index_select(0, rows)), dim=1)
                rel = target.index_select(0, rows) - lo
                output = output.index_copy(0, rows, logp.gather(1, rel.unsqueeze(1)).squeeze(1))
                head_index = head_index.index_fill(0, rows, self.shortlist_size + i - 1)
        if covered != n:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{target.min().item()}, {target.max().item()}] were found. ")
        head_logp = F.log_softmax(self.head(x), dim=1)
        output = output + head_logp.gather(1, head_index.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _get_full_log_prob(self, x: Any, head_output: Any) -> Any:
        head_logp = F.log_softmax(head_output, dim=1)
        parts = [head_logp[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logp = F.log_softmax(self.tail[i](x), dim=1)
            parts.append(cluster_logp + head_logp[:, self.shortlist_size + i].unsqueeze(1))
        import ember
        return ember.cat(parts, dim=1)

    def log_prob(self, input: Any) -> Any:  # noqa: A002
        """The log-probabilities of every class, ``(batch, n_classes)`` (or ``(n_classes,)``)."""
        batched = input.dim() == 2
        x = input if batched else input.unsqueeze(0)
        out = self._get_full_log_prob(x, self.head(x))
        return out if batched else out.squeeze(0)

    def predict(self, input: Any) -> Any:  # noqa: A002
        """The most likely class of each row."""
        return self.log_prob(input).argmax(dim=-1)
