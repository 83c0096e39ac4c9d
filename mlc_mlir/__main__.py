"""``python -m mlc_mlir [--json]``: the installation report (see :mod:`mlc_mlir.doctor`)."""

import sys

from .doctor import main

sys.exit(main())
