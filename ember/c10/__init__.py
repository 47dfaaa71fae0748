"""ember's core: devices, dtypes, dispatch keys, storages, tensor metadata, generators (``c10/core``)."""
