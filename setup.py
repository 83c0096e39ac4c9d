"""Package layout (metadata lives in pyproject.toml).

The IRDL dialect definitions stay in the repository's top-level ``dialects/`` and are
installed inside the package as ``mlc_mlir.dialects`` (found at run time through
``importlib.resources``). pyproject.toml's package discovery cannot map one extra
directory into a discovered package, hence this file.
"""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["mlc_mlir", "mlc_mlir.*"]) + ["mlc_mlir.dialects"],
    package_dir={"mlc_mlir.dialects": "dialects"},
    package_data={"mlc_mlir": ["py.typed"], "mlc_mlir.runtime": ["include/*.h"], "mlc_mlir.dialects": ["*.irdl.mlir"]},
)
