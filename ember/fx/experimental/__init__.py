"""``torch.fx.experimental``: ``proxy_tensor.make_fx``, the ATen-level tracer."""
