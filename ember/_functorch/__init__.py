"""``ember._functorch``: AOT autograd (Note [AOT autograd] in ``aot_autograd.py``)."""
