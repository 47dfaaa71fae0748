"""ember's code generator: native_functions.yaml -> ember/_generated (see gen.py)."""
