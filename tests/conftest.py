import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# every compile fallback is an error in the tests (Note [Compile fallbacks] in ember/_dynamo/utils.py); the tests of
# the fallbacks themselves turn it off (subprocesses the tests start inherit it)
os.environ.setdefault("EMBER_COMPILE_STRICT", "1")
# the threaded paths run whatever else the machine runs (pytest -n 2 keeps both cores busy, which ember would
# otherwise answer with one thread: Note [Threads under load] in ember/aten/parallel.py); its own tests turn it on
os.environ.setdefault("EMBER_DYNAMIC_THREADS", "0")
