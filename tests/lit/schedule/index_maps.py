# RUN: %PYTHON %s | filecheck %s
# Index maps simplified with the loops' ranges before the default rules
# (mlc_mlir/schedule/index_maps.py): a reshape round trip reads at plain dims, a linear
# index in mixed radix becomes an expand_shape view, a division by a multiple of a dim's
# stride splits; a carry that reaches the quotient reads the input viewed flat at the index.
from mlc_mlir.schedule.index_maps import simplify_index_maps
from mlc_mlir.testing import run
from mlc_mlir.testing.programs import gather_generic as generic


# CHECK-LABEL: TEST: test_round_trip
# CHECK: #map = affine_map<(d0, d1) -> (d0, d1)>
# CHECK-NOT: floordiv
@run
def test_round_trip():
    print(simplify_index_maps(generic((1024, 8), (1024, 8), "(d0 floordiv 128) * 128 + d0 mod 128, d1")))


# CHECK-LABEL: TEST: test_mixed_radix
# CHECK: tensor.expand_shape %arg0 {{\[}}[0, 1], [2]] output_shape [8, 4, 16] : tensor<32x16xf32> into tensor<8x4x16xf32>
# CHECK: linalg.generic {indexing_maps = [#map, #map]
@run
def test_mixed_radix():
    print(simplify_index_maps(generic((32, 16), (8, 4, 16), "d0 * 4 + d1, d2")))


# CHECK-LABEL: TEST: test_split_division
# CHECK: affine_map<(d0, d1) -> (d0 floordiv 4, d1 + (d0 mod 4) * 64)>
# CHECK-LABEL: TEST: test_carry_viewed_flat
# CHECK: affine_map<(d0, d1) -> (d0 * 64 + d1)>
# CHECK: tensor.collapse_shape %arg0 {{\[}}[0, 1]] : tensor<4x256xf32> into tensor<1024xf32>
@run
def test_split_division():
    print(simplify_index_maps(generic((4, 256), (12, 64), "(d0 * 64 + d1) floordiv 256, (d0 * 64 + d1) mod 256")))


@run
def test_carry_viewed_flat():
    print(simplify_index_maps(generic((4, 256), (12, 100), "(d0 * 64 + d1) floordiv 256, (d0 * 64 + d1) mod 256")))


# CHECK-LABEL: TEST: test_digits_collapse
# CHECK: #map = affine_map<(d0, d1) -> (d0, d1)>
# CHECK: tensor.collapse_shape %arg0 {{\[}}[0], [1, 2]] : tensor<16x4x7xf32> into tensor<16x28xf32>
@run
def test_digits_collapse():
    print(simplify_index_maps(generic((16, 4, 7), (16, 28), "d0, d1 floordiv 7, d1 mod 7")))


# A linear index read at its digits (a convolution's packed im2col: tap ky of wide pixel
# lane + 16 * tile of channel c, in a padded input of rows of 10): the input viewed flat,
# read at the index; indices that are not its digits (a row of 20), not.
# CHECK-LABEL: TEST: test_linear_index_collapse
# CHECK: #map = affine_map<(d0, d1, d2, d3) -> (d1, d0 * 16 + d2 * 10 + d3)>
# CHECK: tensor.collapse_shape %arg0 {{\[}}[0], [1, 2]] : tensor<4x6x10xf32> into tensor<4x60xf32>
# CHECK-LABEL: TEST: test_linear_index_not_digits
# CHECK-NOT: collapse_shape
# CHECK: floordiv 20
@run
def test_linear_index_collapse():
    index = "d2 * 10 + d0 * 16 + d3"
    print(simplify_index_maps(generic((4, 6, 10), (3, 4, 2, 16), f"d1, ({index}) floordiv 10, ({index}) mod 10")))


@run
def test_linear_index_not_digits():
    index = "d2 * 10 + d0 * 16 + d3"
    print(simplify_index_maps(generic((4, 3, 10), (3, 4, 2, 16), f"d1, ({index}) floordiv 20, ({index}) mod 10")))


# A fold that would read a dim plainly at a loop of a smaller extent (14 of 16 columns:
# linalg infers the loop's range from every plain read, so the generic would not verify)
# keeps the map as it was.
# CHECK-LABEL: TEST: test_partial_dim_kept
# CHECK: affine_map<(d0, d1) -> (d0 + d1 floordiv 16, d1 mod 16)>
@run
def test_partial_dim_kept():
    print(simplify_index_maps(generic((3, 16), (3, 14), "d0 + d1 floordiv 16, d1 mod 16")))
