"""Command-line tools (``mlc-opt``)."""
