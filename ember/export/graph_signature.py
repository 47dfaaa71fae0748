"""What each input and output of an exported graph is (``torch/export/graph_signature.py``).

An exported graph takes its module's state as inputs: parameters, then buffers, then constant tensors, then the
user's inputs, in that order; each placeholder's ``InputSpec`` says which (and the state's name in the module).
Its outputs are, after ``run_decompositions``, the new values of the buffers, parameters and user inputs the
program mutated, then the user's outputs; each ``OutputSpec`` says which.
"""
from __future__ import annotations

import dataclasses
from enum import Enum, auto
from typing import Any, Union

__all__ = ["InputKind", "InputSpec", "OutputKind", "OutputSpec", "TensorArgument", "SymIntArgument",
           "ConstantArgument", "CustomObjArgument", "TokenArgument", "ExportGraphSignature", "ExportBackwardSignature"]


@dataclasses.dataclass
class TensorArgument:
    name: str


@dataclasses.dataclass
class TokenArgument:
    name: str


@dataclasses.dataclass
class SymIntArgument:
    name: str


@dataclasses.dataclass
class CustomObjArgument:
    name: str
    class_fqn: str
    fake_val: Any = None


@dataclasses.dataclass
class ConstantArgument:
    name: str
    value: Union[int, float, bool, str, None]


ArgumentSpec = Union[TensorArgument, SymIntArgument, ConstantArgument, CustomObjArgument, TokenArgument]


class InputKind(Enum):
    USER_INPUT = auto()
    PARAMETER = auto()
    BUFFER = auto()
    CONSTANT_TENSOR = auto()
    CUSTOM_OBJ = auto()
    TOKEN = auto()


@dataclasses.dataclass
class InputSpec:
    kind: InputKind
    arg: ArgumentSpec
    target: str | None
    persistent: bool | None = None

    def __post_init__(self) -> None:
        if self.kind == InputKind.BUFFER and self.persistent is None:
            raise AssertionError("InputSpec for buffers must have persistent specified")

    def __str__(self) -> str:
        target = "" if self.target is None else f" target='{self.target}'"
        persistent = "" if self.persistent is None else f" persistent={self.persistent}"
        return f"{self.arg.name}: {self.kind.name}{target}{persistent}"


class OutputKind(Enum):
    USER_OUTPUT = auto()
    LOSS_OUTPUT = auto()
    BUFFER_MUTATION = auto()
    PARAMETER_MUTATION = auto()
    GRADIENT_TO_PARAMETER = auto()
    GRADIENT_TO_USER_INPUT = auto()
    USER_INPUT_MUTATION = auto()
    TOKEN = auto()


@dataclasses.dataclass
class OutputSpec:
    kind: OutputKind
    arg: ArgumentSpec
    target: str | None

    def __str__(self) -> str:
        target = "" if self.target is None else f" target='{self.target}'"
        return f"{self.arg.name}: {self.kind.name}{target}"


@dataclasses.dataclass
class ExportBackwardSignature:
    gradients_to_parameters: dict[str, str]
    gradients_to_user_inputs: dict[str, str]
    loss_output: str


def _arg_value(spec: Any) -> Any:
    return spec.arg.value if isinstance(spec.arg, ConstantArgument) else spec.arg.name


@dataclasses.dataclass
class ExportGraphSignature:
    """The graph's inputs and outputs, each with its kind (the module above)."""
    input_specs: list[InputSpec]
    output_specs: list[OutputSpec]

    def _inputs(self, kind: InputKind) -> tuple[str, ...]:
        return tuple(s.target for s in self.input_specs if s.kind == kind and s.target is not None)

    @property
    def parameters(self) -> tuple[str, ...]:
        return self._inputs(InputKind.PARAMETER)

    @property
    def buffers(self) -> tuple[str, ...]:
        return self._inputs(InputKind.BUFFER)

    @property
    def non_persistent_buffers(self) -> tuple[str, ...]:
        return tuple(s.target for s in self.input_specs
                     if s.kind == InputKind.BUFFER and s.persistent is False and s.target is not None)

    @property
    def lifted_tensor_constants(self) -> tuple[str, ...]:
        return self._inputs(InputKind.CONSTANT_TENSOR)

    @property
    def lifted_custom_objs(self) -> tuple[str, ...]:
        return self._inputs(InputKind.CUSTOM_OBJ)

    @property
    def user_inputs(self) -> tuple[Any, ...]:
        return tuple(_arg_value(s) for s in self.input_specs if s.kind == InputKind.USER_INPUT)

    @property
    def user_outputs(self) -> tuple[Any, ...]:
        return tuple(_arg_value(s) for s in self.output_specs if s.kind == OutputKind.USER_OUTPUT)

    def _input_map(self, kind: InputKind) -> dict[str, str]:
        return {s.arg.name: s.target for s in self.input_specs if s.kind == kind and s.target is not None}

    def _output_map(self, kind: OutputKind) -> dict[str, str]:
        return {s.arg.name: s.target for s in self.output_specs if s.kind == kind and s.target is not None}

    @property
    def inputs_to_parameters(self) -> dict[str, str]:
        return self._input_map(InputKind.PARAMETER)

    @property
    def inputs_to_buffers(self) -> dict[str, str]:
        return self._input_map(InputKind.BUFFER)

    @property
    def inputs_to_lifted_tensor_constants(self) -> dict[str, str]:
        return self._input_map(InputKind.CONSTANT_TENSOR)

    @property
    def inputs_to_lifted_custom_objs(self) -> dict[str, str]:
        return self._input_map(InputKind.CUSTOM_OBJ)

    @property
    def buffers_to_mutate(self) -> dict[str, str]:
        return self._output_map(OutputKind.BUFFER_MUTATION)

    @property
    def parameters_to_mutate(self) -> dict[str, str]:
        return self._output_map(OutputKind.PARAMETER_MUTATION)

    @property
    def user_inputs_to_mutate(self) -> dict[str, str]:
        return self._output_map(OutputKind.USER_INPUT_MUTATION)

    @property
    def backward_signature(self) -> ExportBackwardSignature | None:
        return None

    @property
    def assertion_dep_token(self) -> None:
        return None

    @property
    def input_tokens(self) -> list[str]:
        return []

    @property
    def output_tokens(self) -> list[str]:
        return []

    def __str__(self) -> str:
        inputs = "\n".join(str(s) for s in self.input_specs)
        outputs = "\n".join(str(s) for s in self.output_specs)
        return f"\n# inputs\n{inputs}\n\n# outputs\n{outputs}\n"
