"""The QuantizedCPU backend (mirrors ``aten/src/ATen/native/quantized``): the kernels of operators over quantized
tensors. The YAML's ``QuantizedCPU: <name>`` names a function of this namespace; like composites, they take the
op's arguments (tensors, not arrays) in schema order.

A quantized tensor's array holds its integers in a structured dtype that carries its quantizer (Note [Quantized
dtypes] in ember/c10/dtype.py, Note [Where a quantized tensor keeps its quantizer] in quantizer.py). An operator
with no QuantizedCPU kernel refuses quantized tensors with PyTorch's "Could not run 'aten::add.Tensor' with arguments
from the 'QuantizedCPU' backend".
"""
from ember.aten.quantized.ops import *  # noqa: F401,F403
from ember.aten.quantized.nn_ops import *  # noqa: F401,F403
