"""``ember.export`` (``torch.export``): a module's forward captured ahead of time as a graph with its state lifted
to inputs and a signature saying what each input and output is -- the form other tools (ONNX, a compiler, a
runtime without Python) take a program in. See ``docs/export.md``.
"""
from __future__ import annotations

from ember.export._serialize import load, save
from ember.export._trace import export
from ember.export.dynamic_shapes import Constraint, Dim, ShapesCollection, dims
from ember.export.exported_program import (ExportedProgram, ModuleCallEntry, ModuleCallSignature,
                                           default_decompositions)
from ember.export.graph_signature import ExportBackwardSignature, ExportGraphSignature
from ember.export.unflatten import FlatArgsAdapter, InterpreterModule, UnflattenedModule, unflatten

__all__ = ["Constraint", "Dim", "ExportBackwardSignature", "ExportGraphSignature", "ExportedProgram",
           "FlatArgsAdapter", "InterpreterModule", "ModuleCallEntry", "ModuleCallSignature", "ShapesCollection",
           "UnflattenedModule", "default_decompositions", "dims", "export", "load", "save", "unflatten"]
