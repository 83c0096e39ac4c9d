"""mlc-opt's command line, parsed the way mlir-opt (LLVM ``cl``) parses it.

Every flag takes one or two dashes (``-split-input-file`` == ``--split-input-file``); a value
follows ``=`` or, for value options, the next argument (``-o out.mlir``). There is no prefix
matching: ``-one-shot-bufferize=X`` is the pass ``one-shot-bufferize`` with options ``X``,
never ``-o``. A flag that is not an mlc-opt option is an upstream pass (``--canonicalize``,
``--one-shot-bufferize="bufferize-function-boundaries"``); whether that pass exists is checked
later, against the MLIR pass registry (:mod:`mlc_mlir.tools.pipeline`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["UsageError", "Options", "Stage", "parse_command_line", "OPTION_HELP"]

DEFAULT_SPLIT_MARKER = "// -----"


class UsageError(Exception):
    """A command-line mistake; ``str()`` is the complete message mlc-opt prints (exit 1)."""


@dataclass(frozen=True)
class Stage:
    """One step of the run, in command-line order.

    ``kind`` is ``"pass"`` (an upstream pass flag; ``name`` and ``options``), ``"pipeline"``
    (``--pass-pipeline``/``-p`` text in ``name``), ``"mlc"`` (project pass ``name``) or
    ``"script"`` (``--transform-script`` path in ``name``).
    """

    kind: str
    name: str
    options: str | None = None
    flag: str = ""


@dataclass
class Options:
    """The parsed command line."""

    input: str = "-"
    output: str = "-"
    stages: list[Stage] = field(default_factory=list)
    flags: dict[str, object] = field(default_factory=dict)

    def get(self, name: str, default: object = None) -> object:
        return self.flags.get(name, default)


# name -> (kind, help). kind: "bool", "value" (=X or next argument), "int", "optional" (=X only).
OPTION_HELP: dict[str, tuple[str, str]] = {
    "o": ("value", "Output filename (default: stdout)"),
    "pass-pipeline": ("value", "Textual pass pipeline, anchored: 'builtin.module(...)'"),
    "p": ("value", "Alias for --pass-pipeline"),
    "transform-script": ("value", "Apply the transform script (a schedule) in FILE"),
    "split-input-file": ("optional", "Split the input at '// -----' (or =MARKER); process each chunk"),
    "output-split-marker": ("value", "Marker between the outputs of split chunks (default '// -----')"),
    "verify-diagnostics": ("optional", "Check diagnostics against expected-* comments (=all|only-expected)"),
    "allow-unregistered-dialect": ("bool", "Allow operations of unregistered dialects"),
    "irdl-file": ("value", "IRDL file whose dialects are loaded before parsing"),
    "verify-each": ("bool", "Run the verifier after each pass (default: true)"),
    "dump-pass-pipeline": ("bool", "Print the pipeline that will be run"),
    "show-dialects": ("bool", "Print the available dialects and exit"),
    "list-passes": ("bool", "Print the passes (upstream and --mlc-*) and exit"),
    "version": ("bool", "Print the version and exit"),
    "help": ("bool", "Print this help and exit"),
    "h": ("bool", "Alias for --help"),
    "emit-bytecode": ("bool", "Write MLIR bytecode instead of text"),
    "mlir-print-ir-after-all": ("bool", "Print IR after each pass"),
    "mlir-print-ir-before-all": ("bool", "Print IR before each pass"),
    "mlir-print-ir-after-change": ("bool", "With --mlir-print-ir-after-all: only when the IR changed"),
    "mlir-print-ir-after-failure": ("bool", "Print IR after a pass fails"),
    "mlir-print-ir-module-scope": ("bool", "Print the whole module in IR dumps"),
    "mlir-print-ir-tree-dir": ("value", "Write IR dumps as a file tree under this directory"),
    "mlir-print-debuginfo": ("bool", "Print locations"),
    "mlir-pretty-debuginfo": ("bool", "Print locations in a readable (unparsable) form"),
    "mlir-print-op-generic": ("bool", "Print the generic op form"),
    "mlir-print-local-scope": ("bool", "Print with local scope (no attribute/type aliases)"),
    "mlir-print-assume-verified": ("bool", "Skip the verifier when printing"),
    "mlir-print-skip-regions": ("bool", "Do not print regions"),
    "mlir-use-nameloc-as-prefix": ("bool", "Use NameLocs as SSA name prefixes"),
    "mlir-elide-elementsattrs-if-larger": ("int", "Elide elements attributes larger than this"),
    "mlir-elide-resource-strings-if-larger": ("int", "Elide resource strings longer than this"),
    "mlir-timing": ("bool", "Display pass execution times"),
    "mlir-pass-statistics": ("bool", "Display pass statistics"),
    "mlir-disable-threading": ("bool", "Disable multi-threading in MLIR"),
}

# mlir-opt options that mlc-opt recognises but cannot honour through the Python bindings.
UNSUPPORTED = (
    "mlir-print-ir-after", "mlir-print-ir-before", "mlir-print-unique-ssa-ids", "mlir-print-value-users",
    "mlir-print-elementsattrs-with-hex-if-larger", "no-implicit-module", "run-reproducer",
    "mlir-pass-pipeline-crash-reproducer", "mlir-pass-pipeline-local-reproducer", "load-pass-plugin",
    "load-dialect-plugin", "verify-roundtrip", "mlir-debug-counter", "mlir-print-debug-counter",
    "log-actions-to", "mlir-generate-reproducer", "mlir-very-unsafe-disable-verifier-on-parsing",
    "emit-bytecode-version", "mlir-timing-display", "mlir-output-format", "mlir-pass-statistics-display",
    "mlir-print-stacktrace-on-diagnostic", "mlir-diagnostic-verbosity-level", "mlir-disable-diagnostic-notes",
    "mlir-print-op-on-diagnostic", "mlir-enable-debugger-hook", "debug", "debug-only",
)
_ALIASES = {"p": "pass-pipeline", "h": "help"}
_TRUE = ("true", "TRUE", "True", "1")
_FALSE = ("false", "FALSE", "False", "0")


def _bool(name: str, value: str | None) -> bool:
    if value is None or value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise UsageError(f"mlc-opt: for the --{name} option: '{value}' is invalid value for boolean argument! "
                     "Try 0 or 1")


def _optional(name: str, value: str | None) -> str | bool:
    if name == "verify-diagnostics":
        if value not in (None, "all", "only-expected"):
            raise UsageError(f"mlc-opt: for the --verify-diagnostics option: Cannot find option named '{value}'!")
        return value or "all"
    if value == "":
        raise UsageError(f"mlc-opt: for the --{name} option: the marker must not be empty")
    return value or DEFAULT_SPLIT_MARKER


def _value(name: str, kind: str, value: str | None, argv: list[str], i: int) -> tuple[object, int]:
    """The option's value and the index of the next argument."""
    if kind == "bool":
        return _bool(name, value), i + 1
    if kind == "optional":
        return _optional(name, value), i + 1
    if value is None:
        if i + 1 >= len(argv):
            raise UsageError(f"mlc-opt: for the -{name} option: requires a value!")
        value, i = argv[i + 1], i + 1
    if kind == "int":
        try:
            return int(value), i + 1
        except ValueError:
            raise UsageError(f"mlc-opt: for the --{name} option: '{value}' value invalid for integer "
                             "argument!") from None
    return value, i + 1


def parse_command_line(argv: list[str]) -> Options:
    """Parse ``argv`` (without the program name) into :class:`Options`.

    Raises:
        UsageError: an option without its value, a bad value, an unsupported mlir-opt option,
            or more than one input file.
    """
    opts = Options()
    positional: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            positional += argv[i + 1:]
            break
        if tok == "-" or not tok.startswith("-"):
            positional.append(tok)
            i += 1
            continue
        body = tok[2:] if tok.startswith("--") else tok[1:]
        name, eq, raw = body.partition("=")
        value = raw if eq else None
        name = _ALIASES.get(name, name)
        if name in OPTION_HELP:
            kind = OPTION_HELP[name][0]
            parsed, i = _value(name, kind, value, argv, i)
            _record(opts, name, parsed, tok)
        elif name in UNSUPPORTED:
            raise UsageError(f"mlc-opt: the mlir-opt option '-{name}' is not supported by mlc-opt")
        elif name.startswith("mlc-") and len(name) > 4:
            opts.stages.append(Stage("mlc", name[4:], value, tok))
            i += 1
        elif name and name[0].isalnum():
            opts.stages.append(Stage("pass", name, value, tok))
            i += 1
        else:
            raise UsageError(f"mlc-opt: Unknown command line argument '{tok}'.  Try: 'mlc-opt --help'")
    if len(positional) > 1:
        raise UsageError("mlc-opt: Too many positional arguments specified!\n"
                         "Can specify at most 1 positional arguments: See: mlc-opt --help")
    if positional:
        opts.input = positional[0]
    return opts


def _record(opts: Options, name: str, value: object, tok: str) -> None:
    if name == "o":
        opts.output = str(value)
    elif name == "pass-pipeline":
        opts.stages.append(Stage("pipeline", str(value), None, tok))
    elif name == "transform-script":
        opts.stages.append(Stage("script", str(value), None, tok))
    else:
        opts.flags[name] = value
