"""``python -m simcxl.cli``."""

from . import main

if __name__ == "__main__":
    main()
