"""The project's IRDL dialect definitions (``*.irdl.mlir``), installed as ``mlc_mlir.dialects``.

This directory stays at the repository's top level; setup.py maps it into the package so
wheels, sdists and editable installs all carry the files, which ``mlc_mlir.context`` finds
through ``importlib.resources``.
"""
