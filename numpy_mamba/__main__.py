"""``python -m numpy_mamba COMMAND [options]``: see numpy_mamba.cli for the commands."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
