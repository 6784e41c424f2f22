"""`minimod.testing`: the former name of `minimod.test_utils` (`mx.test_utils`), kept for
code that imports it; one implementation, in minimod/test_utils/."""
import sys

from . import test_utils

sys.modules[__name__] = test_utils
