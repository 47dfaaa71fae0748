"""Looking at the graph behind a tensor (for learners): ``graph_text`` prints each node with its saved
tensors (shape, version when saved, version now) and edges; ``graph_dot`` writes Graphviz DOT;
``render_graph`` turns DOT into PNG/SVG with the ``dot`` program when it is installed."""
from __future__ import annotations

import shutil
import subprocess
from typing import Any

from ember.autograd.graph import AccumulateGrad, SavedVariable


def _walk(root: Any) -> Any:
    order, seen, stack = [], set(), [root]
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        order.append(n)
        for e in n._next:
            if e is not None:
                stack.append(e.node)
    return order


def _saved(node: Any) -> Any:
    out = []
    names = list(getattr(node, "_saved_names", ()))
    for name in names:
        sv = getattr(node, name, None)
        items = sv if isinstance(sv, list) else [sv]
        for s in items:
            if isinstance(s, SavedVariable):
                if s.released:
                    out.append(f"{name.rstrip('_')}: <freed>")
                elif s.tensor is not None:
                    t = s.tensor
                    out.append(f"{name.rstrip('_')}: {list(t.shape)} {t.dtype} saved at version {s.version}, "
                               f"now {t._version}")
    for s in getattr(node, "_saved_list", None) or ():
        if isinstance(s, SavedVariable) and s.tensor is not None:
            out.append(f"saved: {list(s.tensor.shape)} saved at version {s.version}, now {s.tensor._version}")
    return out


def _label(node: Any) -> Any:
    if isinstance(node, AccumulateGrad):
        v = node.variable
        return f"AccumulateGrad ({list(v.shape)} {v.dtype})" if v is not None else "AccumulateGrad (freed)"
    return node.name()


def graph_text(t: Any) -> str:
    """The autograd graph behind ``t`` as indented text, one node per line, edges as ``-> node[input_nr]``."""
    if t.grad_fn is None:
        return f"<leaf {list(t.shape)} {t.dtype}, requires_grad={t.requires_grad}>"
    nodes = _walk(t.grad_fn)
    ids = {id(n): i for i, n in enumerate(nodes)}
    lines = [f"graph of tensor {list(t.shape)} {t.dtype} (output {t._output_nr} of {t.grad_fn.name()})"]
    for i, n in enumerate(nodes):
        lines.append(f"[{i}] {_label(n)}")
        for s in _saved(n):
            lines.append(f"      saved {s}")
        for e in n._next:
            if e is None:
                lines.append("      -> (not differentiable)")
            else:
                lines.append(f"      -> [{ids[id(e.node)]}] {_label(e.node)} (input {e.input_nr})")
    return "\n".join(lines)


def graph_dot(t: Any) -> str:
    """Graphviz DOT source of the graph behind ``t``."""
    nodes = _walk(t.grad_fn) if t.grad_fn is not None else []
    ids = {id(n): f"n{i}" for i, n in enumerate(nodes)}
    out = ["digraph autograd {", '  rankdir="BT";', '  node [shape=box, fontname="monospace", fontsize=10];']
    for n in nodes:
        label = _label(n) + "".join("\\n" + s.replace('"', "'") for s in _saved(n))
        color = "lightblue" if isinstance(n, AccumulateGrad) else "white"
        out.append(f'  {ids[id(n)]} [label="{label}", style=filled, fillcolor={color}];')
    for n in nodes:
        for e in n._next:
            if e is not None:
                out.append(f'  {ids[id(e.node)]} -> {ids[id(n)]} [label="{e.input_nr}"];')
    out.append("}")
    return "\n".join(out)


def render_graph(t: Any, path: str, fmt: str = 'png') -> str:
    """Write the graph of ``t`` to ``path`` as PNG or SVG using Graphviz's ``dot`` program."""
    dot = shutil.which("dot")
    if dot is None:
        raise RuntimeError("render_graph needs Graphviz's `dot` program (e.g. `apt-get install graphviz`); "
                           "graph_dot(t) gives the DOT source without it")
    subprocess.run([dot, f"-T{fmt}", "-o", path], input=graph_dot(t), text=True, check=True)
    return path
