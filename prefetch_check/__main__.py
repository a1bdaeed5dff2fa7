"""`python -m prefetch_check`: the same command as `prefetch-check`, for environments where
the script is not on PATH."""

import sys

from prefetch_check.cli import main

sys.exit(main())
