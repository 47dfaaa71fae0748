"""``ember.distributed.algorithms``: DDP's communication hooks."""
