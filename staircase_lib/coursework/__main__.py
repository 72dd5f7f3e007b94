"""``python -m staircase_lib.coursework``: the coursework command line."""
import sys

from .cli import main

sys.exit(main())
