"""``ember._inductor``: the graph compiler behind ``ember.compile``'s default backend (Note [Graph code])."""
