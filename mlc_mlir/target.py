"""Compilation targets: what the code is compiled for (course: ``tvm.target.Target``).

A target string names the backend and, for CPUs, overrides of the host CPU::

    Target("llvm")                              # the host CPU (name and features read from it)
    Target("llvm -mcpu=skylake-avx512")         # another x86 CPU: AVX-512, 32 x 512-bit registers
    Target("llvm -mattr=+avx2,+fma")            # the host CPU with features added / removed
    Target("llvm -num-cores=1")                 # fewer cores for parallel loops
    Target("cuda -arch=sm_90")

What the schedule rules and the JIT read from a CPU target: the vector register width in
bits (:attr:`Target.vector_bits`), the number of vector registers
(:attr:`Target.vector_registers`: SSE 16 x 128, AVX/AVX2 16 x 256, AVX-512 32 x 512, NEON
32 x 128), FMA, the core count, and the register tile of a matmul
(:meth:`Target.register_tile`). The host CPU's name comes from LLVM (``llc --version``'s
``Host CPU``, the name LLVM's own host detection gives), its features from
``/proc/cpuinfo``; ``-mcpu`` replaces both by a known CPU's, ``-mattr`` adds (``+f``) or
removes (``-f``) features. The JIT compiles every function for the target's CPU and
features (``target_cpu`` / ``target_features`` on each ``llvm.func``).
"""

from __future__ import annotations

import functools
import logging
import os
import platform
import re
import subprocess

from .errors import BuildError

log = logging.getLogger(__name__)

__all__ = ["Target", "TargetError", "host_cpu_name", "host_features", "KNOWN_CPUS", "CUDA_TAGS", "resolve_tag",
           "PAGE_BYTES"]


class TargetError(BuildError):
    """A target string that cannot be parsed or names an unknown CPU or feature."""


#: a memory page: accesses this far apart miss the hardware prefetchers' streams (the build's
#: software prefetch, :mod:`mlc_mlir.compiler.prefetch`, and the rules that count on it)
PAGE_BYTES = 4096

_SSE = ("sse", "sse2", "sse3", "ssse3", "sse4.1", "sse4.2", "popcnt")
_AVX2 = _SSE + ("avx", "avx2", "fma", "f16c", "bmi", "bmi2")
_AVX512 = _AVX2 + ("avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl")

#: x86 CPUs ``-mcpu`` accepts (LLVM names) and the vector features the rules use
KNOWN_CPUS: dict[str, tuple[str, ...]] = {
    "x86-64": ("sse", "sse2"),
    "x86-64-v2": _SSE,
    "nehalem": _SSE, "westmere": _SSE,
    "sandybridge": _SSE + ("avx",), "ivybridge": _SSE + ("avx", "f16c"),
    "x86-64-v3": _AVX2, "haswell": _AVX2, "broadwell": _AVX2, "skylake": _AVX2,
    "alderlake": _AVX2, "znver1": _AVX2, "znver2": _AVX2, "znver3": _AVX2,
    "x86-64-v4": _AVX512, "skylake-avx512": _AVX512, "cascadelake": _AVX512,
    "cooperlake": _AVX512, "icelake-server": _AVX512, "icelake-client": _AVX512,
    "sapphirerapids": _AVX512, "znver4": _AVX512, "znver5": _AVX512,
}

#: /proc/cpuinfo flag -> LLVM feature name (where they differ)
_CPUINFO = {"sse4_1": "sse4.1", "sse4_2": "sse4.2", "pni": "sse3", "asimd": "neon"}
_KINDS = ("llvm", "cpu", "cuda")
_OPTION = re.compile(r"^--?([a-z][a-z0-9-]*)=(\S+)$")  # -name=value (TVM), --name=value (the course)


@functools.lru_cache(maxsize=1)
def host_cpu_name() -> str:
    """The host CPU as LLVM names it (``znver3``, ``skylake-avx512``...), or ``"generic"``."""
    from .toolchain import tool_path

    try:
        out = subprocess.run([tool_path("llc"), "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError, BuildError):
        return "generic"
    m = re.search(r"Host CPU:\s*(\S+)", out)
    return m.group(1) if m else "generic"


@functools.lru_cache(maxsize=1)
def host_features() -> frozenset[str]:
    """Vector features of the host CPU (LLVM names: ``avx2``, ``fma``, ``avx512f``, ``neon``)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            text = f.read()
    except OSError:
        text = ""
    m = re.search(r"^(?:flags|Features)\s*:\s*(.*)$", text, re.MULTILINE)
    flags = m.group(1).split() if m else []
    feats = {_CPUINFO.get(f, f) for f in flags}
    if platform.machine() in ("aarch64", "arm64"):
        feats.add("neon")
    return frozenset(feats)


@functools.lru_cache(maxsize=1)
def host_l2_bytes() -> int | None:
    """The host's L2 cache per core in bytes (Linux sysfs), or None where it does not say."""
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for index in sorted(i for i in os.listdir(base) if i.startswith("index")):
            with open(f"{base}/{index}/level", encoding="utf-8") as f:
                if f.read().strip() != "2":
                    continue
            with open(f"{base}/{index}/size", encoding="utf-8") as f:
                m = re.fullmatch(r"(\d+)([KMG]?)", f.read().strip())
            if m:
                return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]
    except OSError:
        pass
    return None


def _host_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class Target:
    """A parsed target string (see the module docstring); ``str(target)`` gives it back.

    Attributes: ``kind`` (``"llvm"`` or ``"cuda"``), ``cpu`` (LLVM CPU name), ``features``
    (frozenset of LLVM feature names), ``num_cores``, ``options`` (the ``-name=value`` pairs).

    Raises:
        TargetError: an unknown kind, option, ``-mcpu`` or a malformed ``-mattr``.
    """

    def __init__(self, text: str = "llvm"):
        kind, options = _parse(text)
        cpu, feats = host_cpu_name(), set(host_features())
        if "mcpu" in options:
            cpu = options["mcpu"]
            if cpu not in KNOWN_CPUS:
                raise TargetError(f"target {text!r}: unknown -mcpu={cpu!r}; known: {sorted(KNOWN_CPUS)}")
            feats = set(KNOWN_CPUS[cpu])
        for item in filter(None, options.get("mattr", "").split(",")):
            if item[0] not in "+-" or len(item) < 2:
                raise TargetError(f"target {text!r}: -mattr entries are +feature or -feature, got {item!r}")
            (feats.add if item[0] == "+" else feats.discard)(item[1:])
        cores = options.get("num-cores", str(_host_cores()))
        if not cores.isdigit() or int(cores) < 1:
            raise TargetError(f"target {text!r}: -num-cores must be a positive integer, got {cores!r}")
        self.kind = kind
        self.cpu = cpu
        self.features = frozenset(feats)
        self.num_cores = int(cores)
        self.options = options
        self.text = " ".join(text.split())

    @staticmethod
    def of(target: str | Target | None) -> Target:
        """``target`` as a :class:`Target` (``None``: the host, ``"llvm"``)."""
        if isinstance(target, Target):
            return target
        return Target("llvm" if target is None else target)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Target) and (self.kind, self.cpu, self.features, self.num_cores) == (
            other.kind, other.cpu, other.features, other.num_cores)

    def __hash__(self) -> int:
        return hash((self.kind, self.cpu, self.features, self.num_cores))

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return (f"Target({self.text!r}: cpu={self.cpu}, {self.vector_registers} x {self.vector_bits}-bit vector "
                f"registers, fma={self.has_fma}, cores={self.num_cores})")

    # -- what the rules read -------------------------------------------------------------
    @property
    def is_cpu(self) -> bool:
        """Whether this is a CPU (LLVM) target."""
        return self.kind in ("llvm", "cpu")

    @property
    def vector_bits(self) -> int:
        """Width of one vector register in bits (512 AVX-512, 256 AVX, 128 SSE/NEON)."""
        if "avx512f" in self.features:
            return 512
        if "avx" in self.features or "avx2" in self.features:
            return 256
        return 128

    @property
    def vector_registers(self) -> int:
        """Number of architectural vector registers (32 with AVX-512 or NEON, else 16)."""
        return 32 if ("avx512f" in self.features or "neon" in self.features) else 16

    @property
    def has_fma(self) -> bool:
        """Whether the CPU has fused multiply-add instructions."""
        return bool({"fma", "avx512f", "neon"} & self.features)

    def vector_lanes(self, dtype: str = "float32") -> int:
        """Elements of ``dtype`` in one vector register."""
        bits = {"float64": 64, "f64": 64, "float32": 32, "f32": 32, "float16": 16, "f16": 16,
                "bfloat16": 16, "bf16": 16, "int32": 32, "i32": 32, "int64": 64, "i64": 64,
                "int16": 16, "i16": 16, "int8": 8, "i8": 8}.get(str(dtype))
        if bits is None:
            raise TargetError(f"vector_lanes: unsupported dtype {dtype!r}")
        return max(1, self.vector_bits // bits)

    def register_tile(self, dtype: str = "float32") -> tuple[int, int]:
        """(rows, columns) of a matmul register tile that fills the vector register file.

        Columns: two vectors (``2 * lanes``), so that each broadcast A element feeds two
        FMAs. Rows: as many as the registers left after the two B vectors and the one
        broadcast allow, ``(registers - 3) // 2``: AVX2 f32 -> 6 x 16 (12 accumulators +
        2 B loads + 1 broadcast = 16 ymm); AVX-512 f32 -> 14 x 32 (28 accumulators + 3 =
        31 of 32 zmm); SSE f32 -> 6 x 8.
        """
        lanes = self.vector_lanes(dtype)
        return (self.vector_registers - 3) // 2, 2 * lanes

    @property
    def l2_bytes(self) -> int | None:
        """The L2 cache per core in bytes: the host's (sysfs) when this target is the host's
        CPU, else None (unknown: the rules keep their smallest cache blocks)."""
        if self.options.get("mcpu", host_cpu_name()) != host_cpu_name():
            return None
        return host_l2_bytes()

    # -- what the JIT reads --------------------------------------------------------------
    @property
    def is_host(self) -> bool:
        """Whether code for this target runs on this machine (no feature the host lacks)."""
        vector = {"avx", "avx2", "fma", "avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd", "neon"}
        return not ((self.features & vector) - host_features())

    def llvm_function_attrs(self) -> tuple[str | None, list[str]]:
        """(``target_cpu``, ``target_features``) for every ``llvm.func`` of the JIT module.

        ``(None, [])`` for the plain host target (the JIT's own host detection applies);
        with ``-mcpu``/``-mattr``, the CPU name and the ``-mattr`` entries (``+avx2``...).
        """
        if "mcpu" not in self.options and "mattr" not in self.options:
            return None, []
        feats = [f for f in self.options.get("mattr", "").split(",") if f]
        return self.cpu, feats


#: TVM's target tags for NVIDIA GPUs (``tvm.target.Target("nvidia/tesla-p100")``) -> their chip
CUDA_TAGS = {
    "nvidia/tesla-p100": "sm_60", "nvidia/tesla-v100": "sm_70", "nvidia/tesla-t4": "sm_75",
    "nvidia/geforce-rtx-2080-ti": "sm_75", "nvidia/nvidia-a100": "sm_80", "nvidia/a100": "sm_80",
    "nvidia/nvidia-a10g": "sm_86", "nvidia/geforce-rtx-3090": "sm_86", "nvidia/nvidia-l4": "sm_89",
    "nvidia/geforce-rtx-4090": "sm_89", "nvidia/nvidia-h100": "sm_90", "nvidia/h100": "sm_90",
    "nvidia/nvidia-h200": "sm_90",
}
#: the oldest chip the CUDA toolkit compiles for (CUDA 13 dropped sm_50 to sm_72)
_OLDEST_CUDA = (7, 5)


def resolve_tag(target: str) -> str:
    """``target`` with a TVM tag (``"nvidia/tesla-p100"``) spelt as a CUDA target.

    The tag's chip is kept when the toolkit compiles for it (``"cuda -arch=sm_80"``); an
    older one (the course's P100 is sm_60) gives plain ``"cuda"``: the GPU present, else
    sm_90, as for any ``"cuda"`` target. Other targets are returned unchanged.

    Raises:
        TargetError: an ``nvidia/...`` tag that is not known.
    """
    text = str(target).strip()
    if not text.startswith("nvidia/"):
        return text
    tag, _, rest = text.partition(" ")
    if tag not in CUDA_TAGS:
        raise TargetError(f"unknown target tag {tag!r}; known: {', '.join(sorted(CUDA_TAGS))} "
                          "(or 'cuda -arch=sm_XX')")
    chip = CUDA_TAGS[tag]
    major, minor = int(chip[3:-1]), int(chip[-1])
    if (major, minor) < _OLDEST_CUDA:
        log.info("target %s: %s is older than this CUDA toolkit compiles for; building for the GPU present "
                 "(or sm_90)", tag, chip)
        return " ".join(["cuda", *rest.split()])
    return " ".join(["cuda", f"-arch={chip}", *rest.split()])


def _parse(text: str | object) -> tuple[str, dict[str, str]]:
    if not isinstance(text, str):
        raise TargetError(f"target must be a str or mlc.target.Target, got {type(text).__name__}")
    text = resolve_tag(text)
    parts = text.split()
    if not parts or parts[0] not in _KINDS:
        raise TargetError(f"unknown target {text!r}; supported: 'llvm' (options -mcpu=, -mattr=, -num-cores=), "
                          "'cuda' ('cuda -arch=sm_90')")
    options: dict[str, str] = {}
    for part in parts[1:]:
        m = _OPTION.match(part)
        if not m:
            raise TargetError(f"target {text!r}: cannot parse option {part!r} (expected -name=value)")
        options[m.group(1)] = m.group(2)
    allowed = {"mcpu", "mattr", "num-cores"} if parts[0] != "cuda" else {"arch"}
    unknown = set(options) - allowed
    if unknown:
        raise TargetError(f"target {text!r}: unknown option(s) {sorted(unknown)}; {parts[0]!r} accepts "
                          f"{sorted(allowed)}")
    return ("llvm" if parts[0] == "cpu" else parts[0]), options
