"""`python -m minimod.launch ...`: run the launcher (see the package docstring)."""
import sys

from .launcher import main

sys.exit(main())
