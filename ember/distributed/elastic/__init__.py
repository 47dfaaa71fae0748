"""``ember.distributed.elastic``: what scripts written for torchrun import from it
(``multiprocessing.errors.record``)."""
