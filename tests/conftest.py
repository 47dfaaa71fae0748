import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# every compile fallback is an error in the tests (Note [Compile fallbacks] in ember/_dynamo/utils.py); the tests of
# the fallbacks themselves turn it off (subprocesses the tests start inherit it)
os.environ.setdefault("EMBER_COMPILE_STRICT", "1")
