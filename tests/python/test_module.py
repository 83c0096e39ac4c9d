"""mlc.Module: parse, print, lookup, update_func, clone, errors."""

import pytest

import mlc_mlir as mlc

TWO_FUNCS = """
func.func @mm(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>, %y: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%y : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
func.func @relu(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %z = arith.constant 0.0 : f32
  %r = linalg.max ins(%a, %a : tensor<4x4xf32>, tensor<4x4xf32>) outs(%b : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
"""


def test_parse_print_and_lookup():
    mod = mlc.Module.parse(TWO_FUNCS)
    assert mod.functions == ["mm", "relu"]
    assert "mm" in mod and "conv" not in mod
    assert mod["mm"].name == "mm"
    assert "linalg.matmul" in mod.script()
    assert "linalg.matmul" in str(mod["mm"])
    assert str(mod["relu"].function_type) == "(tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>"


def test_show_prints(capsys):
    mlc.Module.parse(TWO_FUNCS).show()
    assert "func.func @relu" in capsys.readouterr().out


def test_unknown_function_names_what_exists():
    mod = mlc.Module.parse(TWO_FUNCS)
    with pytest.raises(mlc.MlcError, match=r"no function named 'conv'.*\['mm', 'relu'\]"):
        mod["conv"]


@pytest.mark.parametrize("text, msg", [
    ("func.func @f( {", "expected non-function type"),
    ("func.func @f() { %x = arith.addf }", "expected"),
    ('"nodialect.some_op"() : () -> ()', "unregistered dialect"),
    ("func.func @f(%a: tensor<4xf32>) -> tensor<8xf32> { return %a : tensor<4xf32> }", "type"),
])
def test_malformed_text_raises_parse_error(text, msg):
    with pytest.raises(mlc.ParseError, match=msg):
        mlc.Module.parse(text)


def test_parse_rejects_non_text():
    with pytest.raises(mlc.ParseError, match="expects MLIR text"):
        mlc.Module.parse(b"func.func @f() { return }")


def test_from_file(tmp_path):
    path = tmp_path / "m.mlir"
    path.write_text(TWO_FUNCS)
    assert mlc.Module.from_file(path).functions == ["mm", "relu"]
    with pytest.raises(mlc.ParseError, match="no such MLIR file"):
        mlc.Module.from_file(tmp_path / "missing.mlir")


def test_clone_is_independent():
    mod = mlc.Module.parse(TWO_FUNCS)
    copy = mod.clone()
    copy["relu"].op.erase()
    assert copy.functions == ["mm"]
    assert mod.functions == ["mm", "relu"]


def test_update_func_swaps_body_and_keeps_name():
    mod = mlc.Module.parse(TWO_FUNCS)
    other = mlc.Module.parse(TWO_FUNCS.replace("@mm(", "@mm_tuned(").replace("linalg.matmul", "linalg.matmul {tuned}"))
    mod.update_func("mm", other["mm_tuned"])
    assert mod.functions == ["mm", "relu"]
    assert "tuned" in str(mod["mm"])
    mod.verify()


def test_update_func_type_mismatch():
    mod = mlc.Module.parse(TWO_FUNCS)
    with pytest.raises(mlc.MlcError, match="differs"):
        mod.update_func("mm", mod["relu"])
    with pytest.raises(mlc.MlcError, match="Function or a Module"):
        mod.update_func("mm", "not a function")


def test_with_attr_renames_like_the_course():
    mod = mlc.Module.parse(TWO_FUNCS.split("func.func @relu")[0])
    renamed = mod.with_attr({"global_symbol": "mm_relu", "tir.noalias": True})
    assert renamed.functions == ["mm_relu"] and mod.functions == ["mm"]
    assert "tir.noalias = true" in str(renamed)
    with pytest.raises(mlc.MlcError, match="one function"):
        mlc.Module.parse(TWO_FUNCS).with_attr({"global_symbol": "x"})
    with pytest.raises(mlc.MlcError, match="non-empty string"):
        mod.with_attr("global_symbol", 3)


def test_layers_not_built_yet_say_so():
    assert mlc.frontend.from_fx  # the PyTorch frontend exists (torch is imported only when called)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        mlc.nothing
    assert mlc.Schedule is mlc.schedule.Schedule and mlc.te.compute and mlc.graph.BlockBuilder
    assert mlc.tune.tune_tir and mlc.meta_schedule.tir_integration.tune_tir is mlc.meta_schedule.tune_tir


def test_parse_error_shows_the_source_line_and_a_caret(tmp_path):
    """As mlc-opt / mlir-opt print it: name:line:col, the line, a caret under the column."""
    text = "func.func @f() {\n  %x = arith.constant 1 : i3x2\n  return\n}\n"
    with pytest.raises(mlc.ParseError) as info:
        mlc.Module.parse(text)
    assert "<string>:2:26: expected non-function type\n  %x = arith.constant 1 : i3x2\n" + " " * 25 + "^" \
        in str(info.value)
    path = tmp_path / "bad.mlir"
    path.write_text(text)
    with pytest.raises(mlc.ParseError, match=rf"{path}:2:26: expected non-function type\n  %x = arith"):
        mlc.Module.from_file(path)
